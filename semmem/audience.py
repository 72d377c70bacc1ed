"""Who may see an item: the one audience rule every door asks.

An item belongs to one audience, decided from its record fields alone (so every copy of it —
a snapshot, an export line, a backup — says the same):

- the **model**'s: facts and conversation pieces (recall, search, the provider's and MCP's
  tools, MCP resources);
- the **application**'s: keyed items it addresses itself, such as a LangGraph store value
  (space ``store``), read back only through ``POST /store``;
- a **system** record: what semmem keeps to find the others (the namespace registry's
  entries, space ``store-ns``), never a user's data.

A caller is the model, the application or the owner (admin API, console, export, CLI). The
model sees the model's items only; an item it may not see is answered as a number that does
not exist (the same 404 and wording), is left out of every count it is told, and is not
counted against its quota. The application sees its own items; the owner sees both, never a
system record as a user's item. Quotas hold per audience: each audience's live items are
counted against the partition's limit on their own, so neither starves the other.

A door asks ``may_see(caller, item)`` for each item it would show, ``visible(caller, items)``
for many, and ``counted(caller, live, application)`` for a count it answers.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from enum import Enum
from typing import Any, Protocol, TypeVar


class Recorded(Protocol):
    """An item as the rule reads it: its record fields (``semmem.items.Item`` is one)."""

    @property
    def attrs(self) -> Mapping[str, Any]:
        """The item's record fields."""
        ...


R = TypeVar("R", bound=Recorded)

KEYED = "keyed"  # the record field naming a keyed item's address (``semmem.keyed``)
# Keyed spaces whose pieces are not the model's: the application's, and system records'.
APPLICATION_SPACES = frozenset({"store"})
# ``store-ns``: the namespace listing of releases up to 62c1cbc (partition ``%store-namespaces``,
# deleted by the upgrade to store format 3, ``stored/upgrade.py``); a replica of such a release
# left running may write it again, and its keys are namespaces (often user ids).
SYSTEM_SPACES = frozenset({"store-ns"})


class Audience(Enum):
    """Whose an item is."""

    MODEL = "model"
    APPLICATION = "application"
    SYSTEM = "system"


class Caller(Enum):
    """Who asks: the model (its tools, recall, MCP), the application (``/store``,
    ``/ingest``), or the owner (admin API, console, export, CLI)."""

    MODEL = "model"
    APPLICATION = "application"
    OWNER = "owner"


def editor(owner: bool) -> Caller:
    """Who edits an item: the owner, or else the model (its tools' ``owner=False``)."""
    return Caller.OWNER if owner else Caller.MODEL


# What each caller may see.
SEES: Mapping[Caller, frozenset[Audience]] = {
    Caller.MODEL: frozenset({Audience.MODEL}),
    Caller.APPLICATION: frozenset({Audience.APPLICATION}),
    Caller.OWNER: frozenset({Audience.MODEL, Audience.APPLICATION}),
}


def audience_of(attrs: Mapping[str, Any]) -> Audience:
    """The audience of an item with record fields ``attrs``."""
    keyed = attrs.get(KEYED)
    if keyed is None:  # most items: a fact
        return Audience.MODEL
    space = keyed.get("space") if isinstance(keyed, dict) else None
    if space in APPLICATION_SPACES:
        return Audience.APPLICATION
    if space in SYSTEM_SPACES:
        return Audience.SYSTEM
    return Audience.MODEL


def may_see(caller: Caller, item: Recorded) -> bool:
    """Whether ``caller`` may see ``item`` (or learn that it exists)."""
    return audience_of(item.attrs) in SEES[caller]


def visible(caller: Caller, items: Iterable[R]) -> list[R]:
    """Those of ``items`` ``caller`` may see (``may_see`` over many, in order)."""
    seen = SEES[caller]
    return [it for it in items if audience_of(it.attrs) in seen]


def counted(caller: Caller, live: int, application: int) -> int:
    """The live items ``caller`` is told a partition holds, of ``live`` items of which
    ``application`` are not the model's (the application's and system records)."""
    if caller is Caller.MODEL:
        return live - application
    if caller is Caller.APPLICATION:
        return application
    return live


def not_models(items: Any) -> int:
    """How many of ``items`` are not the model's (what a partition's head counts apart)."""
    return sum(1 for it in items if audience_of(it.attrs) is not Audience.MODEL)
