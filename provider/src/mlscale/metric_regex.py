"""Metric regexes, matched in linear time: a user's regex meets every log line of a job.

Python's `re` backtracks: `(a+)+$` against 29 characters of a log line took 13 s, in the worker or
triggerer that reports progress. RE2 (google-re2) guarantees time linear in the line's length, for every
pattern it accepts; what it refuses (backreferences, lookaround) is refused when the spec is validated,
naming the field. SageMaker's MetricDefinitions are plain regexes with one capture group
(https://docs.aws.amazon.com/sagemaker/latest/dg/define-train-metrics.html); every one in its examples is RE2.
"""

from __future__ import annotations

from functools import cache


class MetricRegexError(ValueError):
    """The regex is not one RE2 runs in linear time (or not a regex at all)."""


@cache
def compile_metric(regex: str):
    """The RE2 pattern (`.search(line)`, `.groups`); MetricRegexError naming RE2's reason."""
    import re2

    options = re2.Options()
    options.log_errors = False  # the reason is raised, not printed to stderr
    try:
        return re2.compile(regex, options)
    except re2.error as error:
        reason = error.args[0].decode() if error.args and isinstance(error.args[0], bytes) else str(error)
        raise MetricRegexError(
            f"is not a regular expression RE2 can run in linear time ({reason}): "
            "backreferences and lookaround are not supported"
        ) from None
