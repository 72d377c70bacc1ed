"""The store's format: how the data of a store is laid out for the doors that read it,
recorded in the store's metadata (the registry's ``meta`` entry, ``format``).

- 1: up to ``e601069`` the application's LangGraph store items were facts of their
  namespace's partition, whose text is the item's JSON (the Python client's ``SemmemStore``
  of then).
- 2: store items are keyed items of the application (``semmem/stored``), out of the model's
  reach; tables of partition ``SCHEMA_VERSION`` 3. The namespaces holding store items may be
  listed in the partition ``%store-namespaces`` (up to ``62c1cbc``).
- 3: the namespaces are listed by the store's listing records (system records,
  ``store/system.py``), kept by the write path; no partition ``%store-namespaces``.
- 4: store items live in the application's store beside the model's (``store/apart.py``:
  ``<uri>/application``, its own registry, tables, numbers, indexes and listing records);
  the model's store holds facts and conversation pieces only (the step from 3 moves them:
  ``semmem/stored/apart.py``).

The releases up to ``62c1cbc`` record no format: the gate tells 1 from 2 by what the release
wrote (``semmem/stored/marks.py``: a keyed store piece or that listing partition is format 2)
and records it before its first step.

A new store is made at ``FORMAT``. A store of an older format is brought to it by the format
gate (``semmem/lifecycle/upgrading.py``) when a door opens it, each step in place and safe to
run again, the new format recorded once every step is done; a store of a newer format is
refused (a release never reads what a later one wrote). The tables' own columns are migrated
apart, by the first write to an older table (``store/connection.py``).
"""

from __future__ import annotations

from typing import Any

FORMAT = 4
FIRST = 1  # the oldest format (a store recording none is told by its marks: ``stored/marks``)
KEY = "format"  # the metadata's member


def format_of(meta: dict[str, Any] | None) -> int:
    """The format a store's metadata records (``FIRST`` when none: an older release's store;
    ``FORMAT`` for a store with no metadata yet: a new one)."""
    if meta is None:
        return FORMAT
    found = meta.get(KEY)
    return found if isinstance(found, int) and not isinstance(found, bool) else FIRST
