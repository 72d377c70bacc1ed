"""Reads under a filter (``semmem.scoping.Filter``): search, recall and listings over the
facts it covers; a binding's scope over its writes; and the owner's delete by filter.

A snapshot is ranked as it is, with the facts the filter leaves out added to those retention
hides (so ranking's structures per snapshot are shared with unfiltered reads, and a filtered
search orders its facts exactly as an unfiltered one would); an indexed partition's nearest
items are searched among those the filter selects (``store/reads/filtered.py``), and checked again
here. Unfiltered reads never come here: they cost what they cost before.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from semmem import results, rules
from semmem.contract import make_cursor
from semmem.errors import InvalidArguments
from semmem.items import Item
from semmem.results import Recall
from semmem.rules import Alive
from semmem.scoping import Filter
from semmem.store.rows import RECALL_COLUMNS
from semmem.store.views import Candidates, IndexedView, PartitionSnapshot, ReadView

if TYPE_CHECKING:
    from semmem.memory import Memory


def left_out(view: PartitionSnapshot, flt: Filter) -> frozenset[int]:
    """Numbers of the snapshot's facts ``flt`` does not cover."""
    return frozenset(it.n for it in view.items if not flt.matches(it))


def kept(found: Candidates, flt: Filter) -> Candidates:
    """``found`` without the items ``flt`` does not cover."""
    rows = [i for i, it in enumerate(found.items) if flt.matches(it)]
    if len(rows) == found.size:
        return found
    return Candidates([found.items[i] for i in rows], found.vectors[rows], found.head)


async def search(memory: Memory, view: ReadView, query: str, limit: int,
                 flt: Filter) -> dict[str, Any]:
    """``Memory.search`` over the facts ``flt`` covers (``count``: how many it covers)."""
    retention = memory.retention
    if isinstance(view, IndexedView):
        from semmem.store.reads.filtered import (  # the engine: loaded here
            count_where,
            nearest_where,
        )

        view = await retention.live(view)
        assert isinstance(view, IndexedView)
        where = flt.where()
        count = await count_where(memory.store, view, where)
        if not count:
            return {"items": [], "count": 0}
        qvec = await memory._embed(query)
        found = await nearest_where(memory.store, view, qvec, max(limit, memory.index_candidates),
                                    where, RECALL_COLUMNS)
        found = kept(retention.keep(found, await retention.max_age(view.partition)), flt)
        entries = results.search_entries(memory.ranker, found, qvec, query, limit)
        # the count is the filter's over live rows; an expired one not yet swept is in it
        return {"items": entries, "count": max(count, len(entries))}
    hidden = await retention.hidden(view) | left_out(view, flt)
    if view.count == len(hidden):
        return {"items": [], "count": 0}
    qvec = await memory._embed(query)
    return {"items": results.search_entries(memory.ranker, view, qvec, query, limit, hidden),
            "count": view.count - len(hidden)}


async def recall(memory: Memory, partition: str, text: str | None, max_bytes: int,
                 flt: Filter) -> Recall:
    """``Memory.recall`` over the facts ``flt`` covers (a binding's scope), ranked as an
    unfiltered recall ranks them."""
    from semmem.memory import recall_candidates

    retention = memory.retention
    view = await memory._read_view(partition)
    cursor = make_cursor(partition, view.seq)
    if isinstance(view, IndexedView):
        from semmem.store.reads.filtered import nearest_where  # the engine: loaded here

        if text is None or not text.strip():  # newest first: from the live snapshot
            return results.recent(await memory.list(partition, filter=flt), max_bytes, cursor)
        qvec = await memory._embed(text)
        found = await nearest_where(memory.store, view, qvec,
                                    recall_candidates(max_bytes, memory.index_candidates),
                                    flt.where(), RECALL_COLUMNS)
        found = kept(retention.keep(found, await retention.max_age(partition)), flt)
        return results.relevant(memory.ranker, found, qvec, text, max_bytes, cursor)
    hidden = await retention.hidden(view) | left_out(view, flt)
    if view.count == len(hidden):
        return Recall([], [], cursor, [])
    if text is None or not text.strip():
        return results.recent(view.items, max_bytes, cursor, hidden)
    qvec = await memory._embed(text)
    return results.relevant(memory.ranker, view, qvec, text, max_bytes, cursor, hidden)


def scoped(alive: Alive, scope: Filter | None) -> Alive:
    """``alive`` narrowed to the facts ``scope`` covers: a scoped binding's writes find
    duplicates, list similar facts and edit only among them (others are not found)."""
    if scope is None or scope.empty:
        return alive
    return lambda item: alive(item) and scope.matches(item)


def listed(items: list[Item], flt: Filter | None) -> list[Item]:
    """``items`` the filter covers (all of them without one)."""
    return items if flt is None or flt.empty else [it for it in items if flt.matches(it)]


CHUNK = 256  # facts forgotten per commit by a delete by filter


async def forget_matching(memory: Memory, partition: str, flt: Filter) -> list[int]:
    """Forget every live fact ``flt`` covers through the forget path (tombstones: numbers
    never reused; texts purged within the forget window), in commits of ``CHUNK``; each is
    forgotten only if it still matches at the version its commit decides on. Returns the
    numbers forgotten.

    Raises:
        InvalidArguments: an empty filter (deleting every fact is ``delete-partition``).
    """
    if flt.empty:
        raise InvalidArguments("a delete by filter needs a filter; to delete every fact, "
                               "delete the partition")
    numbers = [it.n for it in (await memory.snapshot(partition)).items if flt.matches(it)]
    gone: list[int] = []
    for start in range(0, len(numbers), CHUNK):
        chunk = numbers[start:start + CHUNK]
        result = await memory._write(partition, rules.expire(chunk, lambda it: not flt.matches(it)),
                                     None, dropped=True, numbers=chunk)
        gone.extend(result["expired"])
    return gone
