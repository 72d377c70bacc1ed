"""The memory tools, defined once: names, descriptions, access, idempotency and JSON Schemas.

The server validates arguments with these schemas and ``semmem declare`` hands the very same
definitions to hosts, so what a host validates and what semmem accepts cannot drift apart.
Nothing here imports the core, so the declaration renders without opening a store.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from functools import cached_property
from typing import Any, Literal

from jsonschema import Draft202012Validator

from semmem.contract import (
    DEFAULT_SEARCH_LIMIT,
    MAX_QUERY_CHARS,
    MAX_SEARCH_LIMIT,
    MAX_TEXT_CHARS,
)
from semmem.items import NON_BLANK_PATTERN, TEXT_PATTERN
from semmem.items.metadata import KEY_PATTERN, MAX_KEYS, MAX_VALUE_CHARS
from semmem.protocol.checking import check_arguments

Access = Literal["read", "write"]


# The pattern says the whole rule (1–2,000 characters after trimming whitespace, no NUL), so a
# host's check and the server's agree exactly; a maxLength would count the whitespace around.
_TEXT: dict[str, Any] = {
    "type": "string",
    "minLength": 1,
    "pattern": TEXT_PATTERN,
    "description": (
        f"The fact, one self-contained sentence: 1–{MAX_TEXT_CHARS:,} characters after "
        "trimming surrounding whitespace, no NUL characters. Text that is not valid Unicode "
        "(a lone surrogate) is refused."
    ),
}
_N: dict[str, Any] = {
    "type": "integer",
    "minimum": 1,
    "description": "The fact's number, as shown in recalled memory or search results.",
}


@dataclass(frozen=True)
class ToolSpec:
    """One memory tool as declared to hosts and validated by the server."""

    name: str
    description: str
    access: Access
    idempotent: bool
    input: Mapping[str, Any]

    def declaration(self) -> dict[str, Any]:
        """The tool entry of the ``httpMemory`` declaration."""
        return {
            "name": self.name,
            "description": self.description,
            "access": self.access,
            "idempotent": self.idempotent,
            "input": _plain(self.input),
        }

    def default(self, name: str) -> Any:
        """The schema's default of argument ``name`` (``None`` if it has none)."""
        return self.input.get("properties", {}).get(name, {}).get("default")

    @cached_property
    def validator(self) -> Draft202012Validator:
        """A Draft 2020-12 validator of ``input`` (the schema itself is checked first)."""
        schema = _plain(self.input)
        Draft202012Validator.check_schema(schema)
        return Draft202012Validator(schema)

    def validate(self, arguments: Any) -> dict[str, Any]:
        """Arguments checked against ``input``; integral floats of integer fields become ints.

        Raises:
            InvalidArguments: the arguments do not satisfy the schema (extra properties too;
                sizes checked first, at most ``MAX_PROBLEMS`` problems listed).
        """
        check_arguments(self.name, self.input, self.validator, arguments)
        assert isinstance(arguments, dict)
        props = self.input.get("properties", {})
        # JSON Schema counts 3.0 as an integer; the core wants a Python int.
        return {
            key: int(value)
            if isinstance(value, float) and props.get(key, {}).get("type") == "integer"
            else value
            for key, value in arguments.items()
        }


_TEMPLATES: tuple[ToolSpec, ...] = (
    ToolSpec(
        name="search",
        description=(
            "Search the remembered facts by meaning and get the closest matches with their "
            "numbers and scores, including facts the automatic recall left out. Read-only. "
            "Use it before remembering something that may already be known, or to find the "
            "number of a fact you want to update or forget."
        ),
        access="read",
        idempotent=False,
        input={
            "type": "object",
            "properties": {
                "query": {
                    "type": "string",
                    "minLength": 1,
                    "maxLength": MAX_QUERY_CHARS,
                    "pattern": NON_BLANK_PATTERN,
                    "description": "What to look for, in plain words.",
                },
                "limit": {
                    "type": "integer",
                    "minimum": 1,
                    "maximum": MAX_SEARCH_LIMIT,
                    "default": DEFAULT_SEARCH_LIMIT,
                    "description": "How many facts to return at most (1–50, default 10).",
                },
            },
            "required": ["query"],
            "additionalProperties": False,
        },
    ),
    ToolSpec(
        name="remember",
        description=(
            "Save one durable fact worth knowing in later conversations and get its number. "
            "Numbers are stable: a fact keeps its number for life and recalled memory shows it "
            "as '<n>. <text>'. {written} Remembering a fact that is already there returns its "
            "existing number ('existing': true) instead of a copy. {similar} If the new fact "
            "replaces a listed one (the fact changed), forget or update that one; if it only "
            "restates one, forget the new one; if they are distinct facts, keep both."
        ),
        access="write",
        idempotent=True,
        input={
            "type": "object",
            "properties": {"text": _TEXT},
            "required": ["text"],
            "additionalProperties": False,
        },
    ),
    ToolSpec(
        name="update",
        description=(
            "Replace the text of fact number n, which keeps its number. Use a number you have "
            "seen in recalled memory or search results. {written} If that fact changed since "
            "your memory was recalled, the call fails with a conflict: read memory again before "
            "retrying. Facts the owner curates (hidden from recall, or imported as records) "
            "cannot be changed here. {similar} If a listed fact is what this one replaced, "
            "forget it; if it says the same as this one, forget one of the two."
        ),
        access="write",
        idempotent=True,
        input={
            "type": "object",
            "properties": {"n": _N, "text": _TEXT},
            "required": ["n", "text"],
            "additionalProperties": False,
        },
    ),
    ToolSpec(
        name="forget",
        description=(
            "Delete fact number n for good: it leaves recall at once and every file of the store "
            "within the forget window (about half a minute by default); its number is never "
            "reused. Use a number you have seen in recalled memory or search results. {written} "
            "If that fact changed since "
            "your memory was recalled, the call fails with a conflict: read memory again before "
            "retrying. Facts the owner curates (hidden from recall, or imported as records) "
            "cannot be changed here."
        ),
        access="write",
        idempotent=True,
        input={
            "type": "object",
            "properties": {"n": _N},
            "required": ["n"],
            "additionalProperties": False,
        },
    ),
)

# What a write's result says, and so what the descriptions promise: ``stored`` (visible to the
# next recall) or, where another replica may read a stale version for a while, ``accepted``.
_WRITTEN = {
    False: "The write is stored at once (status 'stored') and visible to the next recall.",
    True: ("The write is accepted at once (status 'accepted'): it is durable, but recall may "
           "take a few seconds to show it."),
}


# What a write's ``similar`` list means, and what the model should do with it.
_SIMILAR = (
    "The result may list 'similar': up to three other facts (number, text, score) that this "
    "one probably restates or replaces, best first."
)


# The remember tool's optional end of a fact, when the owner turns it on (SEMMEM_TOOL_EXPIRY):
# off by default, so the declared tools stay as they are.
_EXPIRES_AT: dict[str, Any] = {
    "type": "string",
    "format": "date-time",
    "minLength": 1,
    "maxLength": 64,
    "description": (
        "Only for a fact with an end date ('in Paris until Friday'): when it stops being "
        "true, as an ISO 8601 date-time such as 2026-09-11T00:00:00Z. The fact is forgotten "
        "then. Leave it out for lasting facts."
    ),
}
_EXPIRY_HINT = " A fact that ends on a date can say when with 'expires_at'."


def _with_expiry(spec: ToolSpec) -> ToolSpec:
    """``remember`` taking the optional ``expires_at``; other tools unchanged."""
    if spec.name != "remember":
        return spec
    schema = {**spec.input, "properties": {**spec.input["properties"],
                                           "expires_at": _EXPIRES_AT}}
    return replace(spec, description=spec.description + _EXPIRY_HINT, input=schema)


# Metadata on the write tools and a filter on search, when the owner turns them on
# (SEMMEM_TOOL_METADATA): off by default, so the declared tools stay as they are. The
# partition is never among them: it comes from the envelope alone.
_META_VALUES: dict[str, Any] = {
    "type": "object",
    "maxProperties": MAX_KEYS,
    "propertyNames": {"pattern": KEY_PATTERN},
    "additionalProperties": {"anyOf": [{"type": "string", "maxLength": MAX_VALUE_CHARS},
                                       {"type": "number"}, {"type": "boolean"}]},
}
_METADATA: dict[str, Any] = {
    **_META_VALUES,
    "description": (
        "Optional labels that scope the fact, such as {\"user\": \"alice\", \"topic\": "
        "\"travel\"}: at most 16 keys, each value a string, number or boolean. On update "
        "they replace the fact's labels ({} clears them); leave them out to keep them."
    ),
}
_RANGE: dict[str, Any] = {
    "type": "object",
    "minProperties": 1,
    "properties": {b: {"type": "string", "format": "date-time", "maxLength": 64}
                   for b in ("gte", "gt", "lte", "lt")},
    "additionalProperties": False,
}
_FILTER: dict[str, Any] = {
    "type": "object",
    "properties": {
        "metadata": {**_META_VALUES,
                     "description": "Only facts whose labels have all these values."},
        "updated": {**_RANGE, "description": "Only facts last changed within these bounds "
                    "(ISO 8601 date-times)."},
        "ts": {**_RANGE, "description": "Only facts first saved within these bounds."},
    },
    "additionalProperties": False,
    "description": "Optional: search only the facts that match all of these.",
}


def _with_metadata(spec: ToolSpec) -> ToolSpec:
    """``remember``/``update`` taking ``metadata`` and ``search`` a ``filter``."""
    extra = {"remember": ("metadata", _METADATA), "update": ("metadata", _METADATA),
             "search": ("filter", _FILTER)}.get(spec.name)
    if extra is None:
        return spec
    schema = {**spec.input, "properties": {**spec.input["properties"], extra[0]: extra[1]}}
    return replace(spec, input=schema)


def tools_for(*, accepted: bool, expiry: bool = False,
              metadata: bool = False) -> tuple[ToolSpec, ...]:
    """The tools with descriptions for a server whose writes answer ``accepted`` (reads may
    lag: a read-consistency interval above zero) or ``stored``; with ``expiry``, ``remember``
    takes an optional ``expires_at`` (the owner's setting ``SEMMEM_TOOL_EXPIRY``); with
    ``metadata``, the writes take ``metadata`` and search a ``filter``
    (``SEMMEM_TOOL_METADATA``)."""
    specs = tuple(replace(spec, description=spec.description.format(
        written=_WRITTEN[accepted], similar=_SIMILAR)) for spec in _TEMPLATES)
    specs = tuple(_with_expiry(spec) for spec in specs) if expiry else specs
    return tuple(_with_metadata(spec) for spec in specs) if metadata else specs


# What the tools answer, as JSON Schemas (the OpenAPI document shows them; the fuzzing tests
# check every answer against them).
SEARCH_RESULT: dict[str, Any] = {
    "type": "object",
    "properties": {
        "items": {"type": "array", "items": {
            "type": "object",
            "properties": {"n": {"type": "integer", "minimum": 1},
                           "text": {"type": "string"}, "score": {"type": "number"},
                           "updatedAt": {"type": "string"},
                           # a conversation's piece: its session, who said it, when
                           "sessionId": {"type": "string"}, "role": {"type": "string"},
                           "at": {"type": "string"}},
            "required": ["n", "text", "score", "updatedAt"]}},
        "count": {"type": "integer", "minimum": 0},
        "truncated": {"const": True},
    },
    "required": ["items", "count"],
    "additionalProperties": False,
}
WRITE_RESULT: dict[str, Any] = {
    "type": "object",
    "properties": {
        "status": {"enum": ["stored", "accepted"]}, "n": {"type": "integer", "minimum": 1},
        "count": {"type": "integer", "minimum": 0}, "existing": {"const": True},
        "forgotten": {"const": True},
        "similar": {"type": "array", "minItems": 1, "maxItems": 3, "items": {
            "type": "object",
            "properties": {"n": {"type": "integer", "minimum": 1},
                           "text": {"type": "string", "minLength": 1},
                           "score": {"type": "number", "maximum": 1.0001}},
            "required": ["n", "text", "score"],
            "additionalProperties": False}},
    },
    "required": ["status", "n", "count"],
    "additionalProperties": False,
}

TOOLS = tools_for(accepted=False)  # the names, access and schemas are the same either way
BY_NAME: dict[str, ToolSpec] = {spec.name: spec for spec in TOOLS}

def _plain(value: Any) -> Any:
    """A deep copy as plain dicts and lists (declarations must not share the definitions)."""
    if isinstance(value, Mapping):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    return value
