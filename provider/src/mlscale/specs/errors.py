"""The error raised for bad input, before any AWS call."""


class SpecError(ValueError):
    """A spec field breaks a rule; the message names the field and the rule."""

    def __init__(self, field: str, rule: str, value: object = None):
        self.field = field
        self.rule = rule
        self.value = value
        shown = "" if value is None else f" (got {value!r})"
        super().__init__(f"{field}: {rule}{shown}")
