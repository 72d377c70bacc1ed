"""A store search's filter, with LangGraph's semantics: each top-level field of the filter
compared with the item's value (a name absent from the value read as a dotted path into nested
objects), nested objects matched by containment, lists element by element, and LangGraph's
operators ``$eq $ne $gt $gte $lt $lte``; any other operator is refused before anything is read.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from semmem.errors import InvalidArguments


def _number(value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float | str):
        raise TypeError(f"not a number: {value!r}")
    return float(value)


# LangGraph's operators, as its InMemoryStore and PostgresStore apply them.
OPERATORS: dict[str, Callable[[Any, Any], bool]] = {
    "$eq": lambda a, b: bool(a == b), "$ne": lambda a, b: bool(a != b),
    "$gt": lambda a, b: _number(a) > _number(b), "$gte": lambda a, b: _number(a) >= _number(b),
    "$lt": lambda a, b: _number(a) < _number(b), "$lte": lambda a, b: _number(a) <= _number(b),
}


def check_filter(wanted: Any) -> dict[str, Any]:
    """A filter as given (``None``: none).

    Raises:
        InvalidArguments: not an object, or an operator LangGraph does not have.
    """
    if wanted is None:
        return {}
    if not isinstance(wanted, dict):
        raise InvalidArguments("filter must be an object")

    def walk(value: Any) -> None:
        if isinstance(value, dict):
            for key, inner in value.items():
                if isinstance(key, str) and key.startswith("$") and key not in OPERATORS:
                    raise InvalidArguments(f"Unsupported operator: {key}",
                                           {"operators": sorted(OPERATORS)})
                walk(inner)
        elif isinstance(value, list):
            for inner in value:
                walk(inner)

    walk(wanted)
    return wanted


def _contains(got: Any, wanted: Any) -> bool:
    if isinstance(wanted, dict):
        if any(isinstance(k, str) and k.startswith("$") for k in wanted):
            try:
                return all(OPERATORS[op](got, operand) for op, operand in wanted.items())
            except (TypeError, ValueError, KeyError):
                return False
        return isinstance(got, dict) and all(_contains(got.get(k), v) for k, v in wanted.items())
    if isinstance(wanted, list):
        return isinstance(got, list) and len(got) == len(wanted) and all(
            _contains(g, w) for g, w in zip(got, wanted, strict=True))
    return bool(got == wanted)


def matches(value: dict[str, Any], wanted: dict[str, Any]) -> bool:
    """Whether an item's value passes the filter."""
    for name, condition in wanted.items():
        got: Any = value.get(name)
        if name not in value and "." in name:
            got = value
            for part in name.split("."):
                got = got.get(part) if isinstance(got, dict) else None
        if not _contains(got, condition):
            return False
    return True
