"""Greengrass component recipes: parsing, manifest selection, recipe variables (AWS IoT Greengrass
Developer Guide, "AWS IoT Greengrass component recipe reference")."""

from __future__ import annotations

import json
import re
from typing import Any


class RecipeError(ValueError):
    pass


def _lower_keys(value: Any) -> Any:
    """Recipe keys are case-insensitive: compare them lower-cased (values keep their case)."""
    if isinstance(value, dict):
        return {
            str(k).lower(): (
                _lower_keys(v) if str(k).lower() not in ("defaultconfiguration", "componentdependencies") else v
            )
            for k, v in value.items()
        }
    if isinstance(value, list):
        return [_lower_keys(v) for v in value]
    return value


def parse_recipe(raw: bytes) -> dict[str, Any]:
    text = raw.decode()
    try:
        recipe = json.loads(text)
    except ValueError:
        import yaml

        try:
            recipe = yaml.safe_load(text)
        except yaml.YAMLError as error:
            raise RecipeError(f"the recipe is neither JSON nor YAML: {error}") from None
    if not isinstance(recipe, dict):
        raise RecipeError("the recipe must be a JSON or YAML object")
    recipe = _lower_keys(recipe)
    for key in ("recipeformatversion", "componentname", "componentversion"):
        if not recipe.get(key):
            raise RecipeError(f"the recipe needs {key}")
    if str(recipe["recipeformatversion"]) != "2020-01-25":
        raise RecipeError(f"RecipeFormatVersion {recipe['recipeformatversion']} is not 2020-01-25")
    if not re.match(r"^\d+\.\d+\.\d+(-[\w.]+)?\Z", str(recipe["componentversion"])):
        raise RecipeError(f"ComponentVersion {recipe['componentversion']} is not semantic versioning (x.y.z)")
    return recipe


def _matches(rule: Any, value: str) -> bool:
    if rule in (None, "*"):
        return True
    rule = str(rule)
    if rule.startswith("/") and rule.endswith("/") and len(rule) > 1:
        return re.fullmatch(rule[1:-1], value) is not None
    return rule.lower() == value.lower()


def select_manifest(recipe: dict, os_name: str, architecture: str) -> dict:
    """The first manifest whose platform matches (exact, '*' or /regex/); none -> the deployment fails."""
    for manifest in recipe.get("manifests") or []:
        platform = manifest.get("platform") or {}
        if _matches(platform.get("os"), os_name) and _matches(platform.get("architecture"), architecture):
            return manifest
    raise RecipeError(
        f"no manifest of {recipe['componentname']} matches platform os={os_name} architecture={architecture}"
    )


def configuration(recipe: dict, update: dict | None) -> dict:
    config = json.loads(json.dumps((recipe.get("componentconfiguration") or {}).get("defaultconfiguration") or {}))
    for key in (update or {}).get("reset") or []:
        config.pop(key.strip("/"), None)
    if (update or {}).get("merge"):
        config.update(json.loads(update["merge"]))
    return config


def substitute(text: str, *, artifacts: str, decompressed: str, work: str, thing: str, config: dict) -> str:
    def pointer(match: re.Match) -> str:
        value: Any = config
        for part in match.group(1).strip("/").split("/"):
            value = value.get(part, "") if isinstance(value, dict) else ""
        return value if isinstance(value, str) else json.dumps(value)

    text = re.sub(r"\{configuration:(/[^}]*)\}", pointer, text)
    return (
        text.replace("{artifacts:path}", artifacts)
        .replace("{artifacts:decompressedPath}", decompressed)
        .replace("{work:path}", work)
        .replace("{iot:thingName}", thing)
    )


def lifecycle_step(step: Any) -> tuple[str | None, int | None]:
    """(script, timeout) of a lifecycle step written as a string or as {Script, Timeout}."""
    if step is None:
        return None, None
    if isinstance(step, str):
        return step, None
    return step.get("script"), step.get("timeout")
