"""A store search's filter, with LangGraph's semantics: each top-level field of the filter
compared with the item's value (a name absent from the value read as a dotted path into nested
objects), nested objects matched by containment, lists element by element, and LangGraph's
operators ``$eq $ne $gt $gte $lt $lte``; any other operator is refused before anything is read.

JSON holds no infinity or NaN, which a LangGraph filter may (``{"score": {"$lt": math.inf}}``):
the clients send such an operand as ``{"$float": "inf" | "-inf" | "nan"}`` and ``check_filter``
reads it back as the float, so it compares as in LangGraph's stores (a stored value is finite:
equal to none, ``$ne`` every one; ``$lt`` infinity every number) and never equals a string (the
string ``"inf"`` is a string operand, as it is in LangGraph).
"""

from __future__ import annotations

import math
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


NON_FINITE = "$float"  # {"$float": "inf" | "-inf" | "nan"}: a number JSON cannot hold
_NON_FINITE = {"inf": math.inf, "-inf": -math.inf, "nan": math.nan}


def check_filter(wanted: Any) -> dict[str, Any]:
    """A filter as given (``None``: none), each ``{"$float": …}`` read as its float.

    Raises:
        InvalidArguments: not an object, an operator LangGraph does not have, or a ``$float``
            that is not ``{"$float": "inf" | "-inf" | "nan"}``.
    """
    if wanted is None:
        return {}
    if not isinstance(wanted, dict):
        raise InvalidArguments("filter must be an object")

    def walk(value: Any, top: bool = False) -> Any:
        if isinstance(value, dict):
            if NON_FINITE in value and not top:
                name = value[NON_FINITE]
                if len(value) != 1 or not isinstance(name, str) or name not in _NON_FINITE:
                    raise InvalidArguments(f'{NON_FINITE} must be alone in its object, one of '
                                           '"inf", "-inf" and "nan"')
                return _NON_FINITE[name]
            for key in value:
                if isinstance(key, str) and key.startswith("$") and key not in OPERATORS:
                    raise InvalidArguments(f"Unsupported operator: {key}",
                                           {"operators": sorted(OPERATORS)})
            return {key: walk(inner) for key, inner in value.items()}
        if isinstance(value, list):
            return [walk(inner) for inner in value]
        return value

    checked: dict[str, Any] = walk(wanted, top=True)
    return checked


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
