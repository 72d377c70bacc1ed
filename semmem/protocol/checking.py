"""Tool arguments checked against a tool's JSON Schema at a bounded cost, and the refusal
worded without quoting the caller's values.

A 64 KiB body can hold thousands of keys where the schema allows 16: checked one by one, they
cost the event loop most of a second and answered a 422 of hundreds of kilobytes. So the
schema's size bounds (``maxProperties``, ``maxLength``, ``maxItems``) are checked first, on
the declared properties only, before any per-key work; the schema check then stops after
``MAX_PROBLEMS`` problems, and ``details`` lists at most those.
"""

from __future__ import annotations

from collections.abc import Mapping
from itertools import islice
from typing import Any

from jsonschema import Draft202012Validator, ValidationError

from semmem.contract import MAX_TEXT_CHARS
from semmem.errors import InvalidArguments
from semmem.items import NON_BLANK_PATTERN, TEXT_PATTERN

MAX_PROBLEMS = 8  # problems a refusal lists; the check stops at the next one
_BOUNDS = (("maxProperties", dict, "properties"), ("maxItems", list, "items"),
           ("maxLength", str, "characters"))


def check_arguments(tool: str, schema: Mapping[str, Any], validator: Draft202012Validator,
                    arguments: Any) -> None:
    """Refuse ``arguments`` that ``schema`` does not accept: an over-size value first, then
    the first ``MAX_PROBLEMS`` schema problems, each as a path and a message.

    Raises:
        InvalidArguments: with ``details.problems`` (and ``details.more`` when the check
            stopped before the end).
    """
    over = _oversized(schema, arguments, "")
    if over is not None:
        problems, more = [over], False
    else:
        found = list(islice(validator.iter_errors(arguments), MAX_PROBLEMS + 1))
        if not found:
            return
        more = len(found) > MAX_PROBLEMS
        found = sorted(found[:MAX_PROBLEMS], key=lambda e: [str(p) for p in e.path])
        problems = [{"path": _path(e.path), "message": _describe(e)} for e in found]
    details: dict[str, Any] = {"problems": problems}
    if more:
        details["more"] = True
    raise InvalidArguments(f"arguments do not match the {tool} tool's schema: "
                           f"{problems[0]['path']}: {problems[0]['message']}", details)


def _oversized(schema: Mapping[str, Any], value: Any, path: str) -> dict[str, str] | None:
    """The first value over one of its schema's size bounds, following declared properties
    only (the schema's depth bounds the walk, whatever the value's)."""
    for rule, kind, unit in _BOUNDS:
        most = schema.get(rule)
        if isinstance(value, kind) and isinstance(most, int) and len(value) > most:
            return {"path": path or "/", "message": f"must have at most {most} {unit} "
                    f"(has {len(value):,})"}
    properties = schema.get("properties")
    if isinstance(value, dict) and isinstance(properties, Mapping):
        for key, sub in properties.items():
            if key in value and isinstance(sub, Mapping):
                found = _oversized(sub, value[key], f"{path}/{_short(key)}")
                if found is not None:
                    return found
    return None


def _path(parts: Any) -> str:
    return "/" + "/".join(_short(str(p)) for p in parts)


def _short(name: str, limit: int = 40) -> str:
    return name if len(name) <= limit else name[:limit] + "…"


def _describe(error: ValidationError) -> str:
    """What is wrong, naming the rule but never quoting the offending value."""
    rule, value, schema = error.validator, error.validator_value, error.schema
    instance = error.instance
    if rule == "type":
        kinds = value if isinstance(value, list) else [value]
        return "must be of type " + " or ".join(str(k) for k in kinds)
    if rule == "required" and isinstance(instance, dict):
        missing = [name for name in value if name not in instance]
        return "missing required properties: " + ", ".join(repr(n) for n in missing)
    if rule == "additionalProperties" and isinstance(instance, dict) and isinstance(schema, dict):
        known = schema.get("properties", {})
        extra = [_short(str(k)) for k in instance if k not in known]
        shown = sorted(extra)[:5]
        more = f" and {len(extra) - 5} more" if len(extra) > 5 else ""
        return ("unexpected properties " + ", ".join(repr(k) for k in shown) + more
                + " (allowed: " + ", ".join(repr(k) for k in known) + ")")
    if rule == "minLength":
        return f"must be at least {value} characters long"
    if rule == "maxLength":
        return f"must be at most {value} characters long"
    if rule == "pattern" and value == NON_BLANK_PATTERN:
        return "must contain a non-blank character"
    if rule == "pattern" and value == TEXT_PATTERN:
        return (f"must hold 1 to {MAX_TEXT_CHARS:,} characters after trimming surrounding "
                "whitespace, and no NUL characters")
    if rule == "minimum":
        return f"must be at least {value}"
    if rule == "maximum":
        return f"must be at most {value}"
    return f"does not satisfy the schema's {rule!r} rule"
