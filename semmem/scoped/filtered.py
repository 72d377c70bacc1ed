"""Reads under a filter (``semmem.items.filters.Filter``): search, recall and listings over the
facts it covers; a binding's scope over its writes; and the owner's delete by filter.

A snapshot is scored as it is and only the rows the filter covers are ranked (so ranking's
structures per snapshot are shared with unfiltered reads, a filtered search orders its facts
exactly as an unfiltered one would, and a covered fact is found however low the whole snapshot
ranks it); which rows those are is read from columns built once per snapshot (``Columns``).
An indexed partition's nearest items are searched among those the filter selects
(``store/reads/filtered.py``), and checked again here. Unfiltered reads never come here: they cost
what they cost before.
"""

from __future__ import annotations

import asyncio
import builtins
from collections import OrderedDict, defaultdict
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt

from semmem import results, rules
from semmem.audience import Caller, visible
from semmem.contract import MAX_SOURCES, make_cursor
from semmem.errors import InvalidArguments
from semmem.items import Item
from semmem.items.filters import Filter, Range
from semmem.items.metadata import value_key
from semmem.results import Recall, recall_candidates
from semmem.rules import Alive
from semmem.store.reads.persistent import Layered
from semmem.store.rows import RECALL_COLUMNS
from semmem.store.views import Candidates, IndexedView, ItemSet, ReadView

if TYPE_CHECKING:
    from semmem.lifecycle.retention import Retention
    from semmem.ranking.ranker import Ranker
    from semmem.store import Store


def _pairs(item: Item) -> list[tuple[str, str]]:
    return [(key, value_key(value)) for key, value in item.metadata.items()]


@dataclass(frozen=True)
class Columns:
    """What a filter reads of a snapshot, built once (``ItemSet.cached``) and carried forward
    with it (``evolve``): the numbers holding each metadata pair, keyed as ``Filter.matches``
    compares them, and per row the number and the times."""

    pairs: Mapping[tuple[str, str], npt.NDArray[np.int64]]  # ascending numbers
    numbers: npt.NDArray[np.int64]
    updated: npt.NDArray[np.int64]
    ts: npt.NDArray[np.int64]

    @classmethod
    def of(cls, items: ItemSet) -> Columns:
        """The columns of ``items``."""
        held: dict[tuple[str, str], list[int]] = defaultdict(list)
        for it in items.items:
            for pair in _pairs(it):
                held[pair].append(it.n)
        size = items.size
        return cls({k: np.asarray(v, np.int64) for k, v in held.items()},
                   np.fromiter((it.n for it in items.items), np.int64, size),
                   np.fromiter((it.updated for it in items.items), np.int64, size),
                   np.fromiter((it.ts for it in items.items), np.int64, size))

    def evolve(self, old: ItemSet, new: ItemSet, appended: range, changed: list[int],
               removed: list[int]) -> Columns:
        """These columns for ``new``: ``old`` with rows ``removed`` (old rows) cut, rows
        ``changed`` (new rows) replaced and rows ``appended`` (what ``store/reads/evolve.py``
        asks of a snapshot's derived structures). Only the pairs the change touches are
        copied; the rest are shared with ``old``'s."""
        cut: dict[tuple[str, str], list[int]] = defaultdict(list)
        put: dict[tuple[str, str], list[int]] = defaultdict(list)
        for row in removed:
            for pair in _pairs(old.items[row]):
                cut[pair].append(old.items[row].n)
        for row in changed:
            it, before = new.items[row], old.get(new.items[row].n)
            if before is not None and set(_pairs(before)) == set(_pairs(it)):
                continue
            for pair in _pairs(before) if before is not None else []:
                cut[pair].append(it.n)
            for pair in _pairs(it):
                put[pair].append(it.n)
        for row in appended:
            for pair in _pairs(new.items[row]):
                put[pair].append(new.items[row].n)
        touched = {}
        for pair in cut.keys() | put.keys():
            held = self.pairs.get(pair, _NONE)
            if pair in cut:
                held = held[~np.isin(held, cut[pair])]
            touched[pair] = np.union1d(held, np.asarray(put.get(pair, ()), np.int64))
        columns = []
        for name, field_ in (("numbers", "n"), ("updated", "updated"), ("ts", "ts")):
            held_column: npt.NDArray[np.int64] = getattr(self, name)
            column = np.delete(held_column, removed) if removed else held_column.copy()
            column[changed] = [getattr(new.items[row], field_) for row in changed]
            columns.append(np.concatenate([column, np.fromiter(
                (getattr(new.items[row], field_) for row in appended), np.int64,
                len(appended))]))
        return Columns(Layered.over(self.pairs, touched) if touched else self.pairs, *columns)


_NONE = np.zeros(0, np.int64)


def covered(view: ItemSet, flt: Filter) -> npt.NDArray[np.intp]:
    """Rows of ``view`` whose items ``flt`` covers, ascending (``Filter.matches`` on each, from
    columns kept per snapshot rather than every item's metadata per read)."""
    cols = view.cached("filter:columns", Columns.of)
    numbers: npt.NDArray[np.int64] | None = None
    for key, value in flt.metadata.items():
        found = cols.pairs.get((key, value_key(value)))
        if found is None or not len(found):
            return np.zeros(0, np.intp)
        numbers = found if numbers is None \
            else np.intersect1d(numbers, found, assume_unique=True)
    rows = np.arange(view.size, dtype=np.intp) if numbers is None \
        else np.searchsorted(cols.numbers, numbers).astype(np.intp)
    for name, column in (("updated", cols.updated), ("ts", cols.ts)):
        bounds: Range = getattr(flt, name)
        if bounds.lo is not None:
            rows = rows[column[rows] >= bounds.lo]
        if bounds.hi is not None:
            rows = rows[column[rows] <= bounds.hi]
    return rows


def shown(view: ItemSet, rows: npt.NDArray[np.intp], hidden: frozenset[int]) -> int:
    """How many of ``rows`` are not ``hidden`` (numbers: the expired)."""
    if not hidden:
        return len(rows)
    at = np.fromiter((view.index_of(n) for n in hidden), np.intp, len(hidden))
    return len(rows) - int(np.isin(at, rows, assume_unique=True).sum())


def kept(found: Candidates, flt: Filter) -> Candidates:
    """``found`` without the items ``flt`` does not cover."""
    rows = [i for i, it in enumerate(found.items) if flt.matches(it)]
    if len(rows) == found.size:
        return found
    return Candidates([found.items[i] for i in rows], found.vectors[rows], found.head)


COUNTS = "filter:counts"  # where an indexed view keeps its ``Counts`` (``IndexedView.derived``)


class Counts:
    """How many live facts the filters asked of an indexed view select at its version, for the
    latest ``size`` filters: kept on the view (``IndexedView.derived``), so they go with it,
    and carried to the view of this process's next commit by what the commit changed
    (``evolve``); a version another process made is counted again when first asked."""

    def __init__(self, held: OrderedDict[str, tuple[Filter, int]] | None = None,
                 size: int = 64) -> None:
        self.size = size
        self._held = held if held is not None else OrderedDict()

    def get(self, where: str) -> int | None:
        """The count of ``where``, if kept."""
        found = self._held.get(where)
        if found is None:
            return None
        self._held.move_to_end(where)
        return found[1]

    def put(self, flt: Filter, where: str, count: int) -> None:
        """Keep ``count`` for ``flt`` (whose expression is ``where``)."""
        self._held[where] = (flt, count)
        while len(self._held) > self.size:
            self._held.popitem(last=False)

    def evolve(self, changes: Sequence[tuple[Item | None, Item | None]]) -> Counts:
        """The counts after a commit that changed each item from its first state to its
        second (``None``: not live)."""
        held: OrderedDict[str, tuple[Filter, int]] = OrderedDict()
        for where, (flt, count) in self._held.items():
            count += sum(1 for _, now in changes if now is not None and flt.matches(now))
            count -= sum(1 for was, _ in changes if was is not None and flt.matches(was))
            held[where] = (flt, count)
        return Counts(held, self.size)


async def live_count(store: Store, view: IndexedView, flt: Filter, where: str) -> int:
    """How many live facts ``flt`` (``where``) selects at ``view``'s version: kept on the view
    once counted, or carried to it from the version before (``Counts``)."""
    from semmem.store.reads.filtered import count_where  # the engine: loaded here

    counts = view.derived.setdefault(COUNTS, Counts())
    assert isinstance(counts, Counts)
    known = counts.get(where)
    found, same = await count_where(store, view, where, known)
    if same and known is None:
        counts.put(flt, where, found)
    return found


def columns(flt: Filter) -> list[str]:
    """What an indexed read under ``flt`` reads of its candidates: a recall's columns, and
    ``ts`` when the filter's check of them needs it (each column is a read per candidate)."""
    return RECALL_COLUMNS if flt.ts == Range() else [*RECALL_COLUMNS, "ts"]


def scoped(alive: Alive, scope: Filter | None) -> Alive:
    """``alive`` narrowed to the facts ``scope`` covers: a scoped binding's writes find
    duplicates, list similar facts and edit only among them (others are not found)."""
    if scope is None or scope.empty:
        return alive
    return lambda item: alive(item) and scope.matches(item)


def reach(scope: Filter | None) -> Alive | None:
    """Which facts a binding's scope reaches, ``None`` for every one (no scope): outside it an
    edit's target reads as a number never given (``targets.check_target``)."""
    return None if scope is None or scope.empty else scope.matches


def listed(items: list[Item], flt: Filter | None, caller: Caller = Caller.OWNER
           ) -> list[Item]:
    """``items`` ``caller`` may see (``semmem.audience``: the owner's listings — admin API,
    console, CLI, export — never show a system record) that the filter covers (all of them
    without one)."""
    shown = visible(caller, items)
    return shown if flt is None or flt.empty else [it for it in shown if flt.matches(it)]


CHUNK = 256  # facts forgotten per commit by a delete by filter


class Filtered:
    """``Memory``'s reads and deletes under a filter (this part of ``Memory``): what they use of
    it, and the reads."""

    store: Store
    ranker: Ranker
    retention: Retention
    index_candidates: int
    _embed_query: Callable[[str, str], Awaitable[np.ndarray]]
    _read_view: Callable[[str], Awaitable[ReadView]]
    _write: Callable[..., Awaitable[dict[str, Any]]]
    list: Callable[..., Awaitable[builtins.list[Item]]]

    async def filtered_search(self, view: ReadView, query: str, limit: int,
                              flt: Filter) -> dict[str, Any]:
        """``Memory.search`` over the facts ``flt`` covers (``count``: how many it covers)."""
        retention = self.retention
        if isinstance(view, IndexedView):
            from semmem.store.reads.filtered import nearest_where  # the engine: loaded here

            view = await retention.live(view)
            assert isinstance(view, IndexedView)
            where = flt.where()

            async def nearest() -> tuple[np.ndarray, Candidates]:
                qvec = await self._embed_query(query, view.partition)
                return qvec, await nearest_where(self.store, view, qvec,
                                                 max(limit, self.index_candidates), where,
                                                 columns(flt))

            # the count beside the search, not before it: its time is hidden behind the search's
            count, (qvec, found) = await asyncio.gather(
                live_count(self.store, view, flt, where), nearest())
            if not count:
                return {"items": [], "count": 0}
            found = kept(retention.keep(found, await retention.max_age(view.partition)), flt)
            entries = results.search_entries(self.ranker, found, qvec, query, limit)
            # the count is the filter's over live rows; an expired one not yet swept is in it
            return {"items": entries, "count": max(count, len(entries))}
        hidden = await retention.hidden(view)
        rows = covered(view, flt)
        count = shown(view, rows, hidden)
        if not count:
            return {"items": [], "count": 0}
        qvec = await self._embed_query(query, view.partition)
        return {"items": results.search_entries(self.ranker, view, qvec, query, limit, hidden,
                                                rows),
                "count": count}

    async def filtered_recall(self, partition: str, text: str | None, max_bytes: int,
                              flt: Filter) -> Recall:
        """``Memory.recall`` over the facts ``flt`` covers (a binding's scope), ranked as an
        unfiltered recall ranks them."""

        retention = self.retention
        view = await self._read_view(partition)
        cursor = make_cursor(partition, view.seq)
        if isinstance(view, IndexedView):
            from semmem.store.reads.filtered import (  # the engine: loaded here
                nearest_where,
                recent_where,
            )

            if text is None or not text.strip():  # newest first, as many as unfiltered reads
                found = await recent_where(self.store, view, 3 * MAX_SOURCES, flt.where())
                found = kept(retention.keep(found, await retention.max_age(partition)), flt)
                return results.recent(found.items, max_bytes, cursor)
            qvec = await self._embed_query(text, partition)
            found = await nearest_where(self.store, view, qvec,
                                        recall_candidates(max_bytes, self.index_candidates),
                                        flt.where(), columns(flt))
            found = kept(retention.keep(found, await retention.max_age(partition)), flt)
            return results.relevant(self.ranker, found, qvec, text, max_bytes, cursor)
        hidden = await retention.hidden(view)
        rows = covered(view, flt)
        if not shown(view, rows, hidden):
            return Recall([], [], cursor, [])
        if text is None or not text.strip():
            return results.recent([view.items[i] for i in rows.tolist()], max_bytes, cursor, hidden)
        qvec = await self._embed_query(text, partition)
        return results.relevant(self.ranker, view, qvec, text, max_bytes, cursor, hidden, rows)

    async def forget_matching(self, partition: str, flt: Filter) -> builtins.list[int]:
        """Forget every live fact ``flt`` covers through the forget path (owners only: no tool
        reaches it) (tombstones: numbers
        never reused; texts purged within the forget window), in commits of ``CHUNK``; each is
        forgotten only if it still matches at the version its commit decides on. Returns the
        numbers forgotten.

        Raises:
            InvalidArguments: an empty filter (deleting every fact is ``delete-partition``).
        """
        if flt.empty:
            raise InvalidArguments("a delete by filter needs a filter; to delete every fact, "
                                   "delete the partition")
        view = await self._read_view(partition)
        if isinstance(view, IndexedView):  # through the filter's indexes, not loaded whole
            from semmem.store.reads.filtered import numbers_where  # the engine: loaded here

            gone_already = set(await self.retention.expired(
                view, await self.retention.max_age(partition)))
            numbers = [n for n in await numbers_where(self.store, view, flt.where())
                       if n not in gone_already]
        else:
            hidden = await self.retention.hidden(view)
            numbers = [n for n in (view.items[i].n for i in covered(view, flt).tolist())
                       if n not in hidden]
        gone: list[int] = []
        for start in range(0, len(numbers), CHUNK):
            chunk = numbers[start:start + CHUNK]
            plan = rules.expire(chunk, lambda it: not flt.matches(it))
            result = await self._write(partition, plan, None, dropped=True, numbers=chunk)
            gone.extend(result["expired"])
        return gone
