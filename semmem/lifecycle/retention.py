"""Retention: how long a fact lives, and the read-time filter that hides it once expired.

A fact's expiry is the earlier of its ``expiresAt`` record field and its last write
(``updated``) plus the partition's effective max age: the partition's override (kept in the
store's registry, so every replica reads the same one) or else the deployment's default
(``SEMMEM_RETENTION``; a longer one than the last full sweep applied takes effect only once a
sweep applied the old one: ``in_force``), or never. Age counts from the last write, never from
recall. From the moment of expiry every read leaves the fact out; the sweep
(``lifecycle/sweep.py``) then forgets it, so its text leaves every file like any forgotten
text. A partition's facts'
expiries are read (through its index) or computed (in its snapshot) only where one can have
expired: with a max age, or when its head row counts a live fact with an expiry of its own
(``cannot_expire``).

``is_live`` is the one test of "live now" (not forgotten, not expired) for whoever needs it
outside the read paths (a restore honouring the live store, say).
"""

from __future__ import annotations

import json
import logging
import re
import time
from collections import OrderedDict
from collections.abc import Callable, Iterable
from dataclasses import dataclass, replace
from functools import lru_cache
from typing import TYPE_CHECKING, Any

import numpy as np

from semmem.contract import check_partition
from semmem.errors import InvalidArguments, StoreChanged, Unavailable
from semmem.items import EXPIRES, Item, now_ms, parse_iso
from semmem.store.rows import ITEM_COLUMNS, table_name
from semmem.store.views import Candidates, IndexedView, ItemSet, PartitionSnapshot, ReadView

if TYPE_CHECKING:
    from semmem.store.tables import Store

NEVER, INHERIT = "never", "inherit"
log = logging.getLogger("semmem.store")
REFRESH_S = 2.0  # how stale this process's copy of the overrides may be (other replicas' sets)
_UNITS = {"d": 86_400_000, "h": 3_600_000, "m": 60_000, "s": 1000}
_DURATION = re.compile(r"^\s*([0-9]{1,9})\s*([smhd])\s*$")
_VIEWS = 256  # filtered views kept (one per partition)


def parse_duration(value: str) -> int:
    """``45s``, ``30m``, ``12h``, ``90d`` → milliseconds.

    Raises:
        InvalidArguments: not a whole number of seconds, minutes, hours or days above zero.
    """
    found = _DURATION.match(value) if isinstance(value, str) else None
    if found is None or int(found[1]) == 0:
        raise InvalidArguments(f"a retention is a duration such as 45s, 30m, 12h or 90d, "
                               f"or {NEVER!r}")
    return int(found[1]) * _UNITS[found[2]]


def format_duration(ms: int | None) -> str:
    """Milliseconds as the largest whole unit (``90d``), or ``never`` for ``None``."""
    if ms is None:
        return NEVER
    for unit, size in _UNITS.items():
        if ms % size == 0:
            return f"{ms // size}{unit}"
    return f"{ms / 1000:g}s"


def parse_policy(value: str) -> int | None:
    """A policy value (a duration or ``never``) → max age in ms, ``None`` for never."""
    return None if isinstance(value, str) and value.strip().lower() == NEVER \
        else parse_duration(value)


@lru_cache(maxsize=4096)
def _ms(value: str) -> int:
    return parse_iso(value)


def in_force(default_ms: int | None, applied: tuple[bool, int | None]) -> int | None:
    """The deployment default in force: the configured one, or the shorter default a sweep
    last applied (recorded in the store) until a sweep has applied the configured one — so a
    longer default set at a restart never brings back a fact the old one had expired."""
    recorded, ms = applied
    if not recorded or ms is None or ms == default_ms:
        return default_ms
    return ms if default_ms is None else min(ms, default_ms)


def expires_at(item: Item, max_age_ms: int | None) -> int | None:
    """When ``item`` expires (epoch ms) under ``max_age_ms``, or ``None`` for never."""
    own = item.attrs.get(EXPIRES)
    at = _ms(own) if isinstance(own, str) else None
    if max_age_ms is not None:
        aged = item.updated + max_age_ms
        at = aged if at is None else min(at, aged)
    return at


def is_live(item: Item | None, max_age_ms: int | None, now: int | None = None) -> bool:
    """Whether ``item`` is live at ``now`` (default: now): there (not forgotten) and not
    expired under ``max_age_ms`` (the partition's effective max age, ``Retention.max_age``)."""
    if item is None:
        return False
    at = expires_at(item, max_age_ms)
    return at is None or at > (now_ms() if now is None else now)


@dataclass(frozen=True)
class Policy:
    """A partition's retention: the deployment default, its own override, the effect."""

    partition: str
    default_ms: int | None
    inherits: bool  # no override: the default applies
    override_ms: int | None = None  # the override's max age (``None``: forever)

    @property
    def max_age_ms(self) -> int | None:
        """The effective max age (``None``: keep forever)."""
        return self.default_ms if self.inherits else self.override_ms

    def public(self) -> dict[str, Any]:
        """The policy as shown to owners."""
        return {"partition": self.partition, "default": format_duration(self.default_ms),
                "override": INHERIT if self.inherits else format_duration(self.override_ms),
                "effective": format_duration(self.max_age_ms),
                "maxAgeS": None if self.max_age_ms is None else self.max_age_ms // 1000}


def _expiries(items: Iterable[Item], max_age_ms: int | None) -> np.ndarray:
    """Each item's expiry (epoch ms; ``inf`` for never), in the items' order."""
    return np.array([float("inf") if (e := expires_at(it, max_age_ms)) is None else e
                     for it in items], dtype=np.float64)


def _rows(view: PartitionSnapshot | Candidates, keep: np.ndarray
          ) -> tuple[list[Item], np.ndarray]:
    """The items and vectors of the rows ``keep`` marks."""
    rows = np.flatnonzero(keep)
    return [view.items[i] for i in rows], view.vectors[rows].reshape(-1, view.vectors.shape[1])


@dataclass
class _Hidden:
    """What is expired in one snapshot, until the next of its facts expires."""

    view: PartitionSnapshot
    max_age_ms: int | None
    hidden: frozenset[int]
    until: float  # epoch ms of the next expiry
    filtered: PartitionSnapshot | None  # the copy without them, once a read asked for it


class Retention:
    """The effective policy of each partition, and views without the facts expired now."""

    def __init__(self, store: Store, default_ms: int | None = None, *,
                 refresh_s: float = REFRESH_S) -> None:
        self.store = store
        self.default_ms = default_ms
        self.refresh_s = refresh_s
        self._overrides: dict[str, int | None] = {}
        self._applied: tuple[bool, int | None] = (False, None)  # the default a sweep applied
        self._read_at = float("-inf")
        self._views: OrderedDict[str, _Hidden] = OrderedDict()  # by partition
        self._lifetimes: OrderedDict[tuple[str, int], tuple[np.ndarray, ...]] = OrderedDict()
        # Told of a partition a read found expired facts in (a server sweeps it soon: until
        # then each new version costs a filtered copy of its snapshot).
        self.found_expired: Callable[[str], None] | None = None

    # ----- policies ---------------------------------------------------------------------------
    async def _current(self) -> dict[str, int | None]:
        """The overrides, read again once ``refresh_s`` old; a failed read keeps the last
        ones (and is tried again by the next read), or is ``Unavailable`` if there are none.
        """
        if time.monotonic() - self._read_at >= self.refresh_s:
            try:
                self._overrides, self._applied = await self.store.retention_policies()
            except StoreChanged:
                raise  # not a failed read: this process may write no more
            except Exception as exc:  # the engine's errors are not a typed tree
                if self._read_at == float("-inf"):
                    raise Unavailable(f"cannot read the retention policies: {exc}") from exc
                log.warning("could not read the retention policies; using the last ones",
                            exc_info=True)
                return self._overrides
            self._read_at = time.monotonic()
        return self._overrides

    async def refresh(self) -> None:
        """Read the policies again if they are ``refresh_s`` old: before a read or a write,
        so what the store holds of a table another process deleted is dropped first
        (``Store.follow_deleted``)."""
        await self._current()

    async def policy(self, partition: str) -> Policy:
        """``partition``'s policy (overrides set by other processes: within ``refresh_s``)."""
        overrides = await self._current()
        name = table_name(partition)
        return Policy(partition, in_force(self.default_ms, self._applied), name not in overrides,
                      overrides.get(name))

    async def settle(self) -> None:
        """Record the configured default as applied (a sweep of every partition under the
        default in force has just run), so from now on it is the one in force."""
        await self._current()
        if self._applied != (True, self.default_ms):
            await self.store.set_applied_retention(self.default_ms)
            self._read_at = float("-inf")

    async def max_age(self, partition: str) -> int | None:
        """``partition``'s effective max age in ms (``None``: forever)."""
        return (await self.policy(partition)).max_age_ms

    async def set(self, partition: str, value: str) -> Policy:
        """Set ``partition``'s override: a duration, ``never`` or ``inherit`` (the default).

        Raises:
            InvalidArguments: ``value`` is none of those.
            InvalidInput: a new override for a partition key over the bound (an old one's
                can still be dropped).
        """
        inherit = isinstance(value, str) and value.strip().lower() == INHERIT
        ms = None if inherit else parse_policy(value)
        if not inherit:
            check_partition(partition)
        await self.store.set_retention(partition, ms, inherit=inherit)
        self._read_at = float("-inf")  # this process sees its own change at once
        return await self.policy(partition)

    # ----- the read-time filter ---------------------------------------------------------------
    def alive(self, max_age_ms: int | None) -> Callable[[Item], bool]:
        """A test of "not expired now" under ``max_age_ms`` (a write's rules use it)."""
        return lambda item: is_live(item, max_age_ms)

    def keep(self, found: Candidates, max_age_ms: int | None) -> Candidates:
        """``found`` without the items expired now."""
        if not found.items:
            return found
        alive = _expiries(found.items, max_age_ms) > now_ms()
        return found if alive.all() else Candidates(*_rows(found, alive), found.head)

    async def nearest(self, view: ReadView, query: np.ndarray, k: int,
                      columns: list[str] = ITEM_COLUMNS) -> ItemSet:
        """What ranking scores: ``view`` itself, or an indexed one's ``k`` nearest items that
        have not expired (read with ``columns``, ``Store.nearest``)."""
        if not isinstance(view, IndexedView):
            return view
        return self.keep(await self.store.nearest(view, query, k, columns),
                         await self.max_age(view.partition))

    async def recent(self, view: IndexedView, k: int) -> Candidates:
        """An indexed partition's ``k`` most recently updated items, the expired left out."""
        return self.keep(await self.store.recent(view, k), await self.max_age(view.partition))

    async def counted(self, partition: str, result: dict[str, Any], *,
                      sets_expiry: bool = False) -> dict[str, Any]:
        """A write's result with ``count`` leaving out the facts expired now, as reads do
        (where this process holds the partition's snapshot; a partition written through write
        views is not loaded for it). The expired are those of the snapshot the write was
        decided beside, so the answer does not wait for the snapshot to move, unless the write
        itself set an expiry (``sets_expiry``): then the snapshot at its own version."""
        view = self.store.cached_view(partition)
        if "count" not in result or not isinstance(view, PartitionSnapshot):
            return result
        if sets_expiry:
            moved = await self.store.read_view(partition)
            if not isinstance(moved, PartitionSnapshot):
                return result
            view = moved
        hidden = len(await self.hidden(view))
        return {**result, "count": max(0, result["count"] - hidden)} if hidden else result

    async def live(self, view: ReadView) -> ReadView:
        """``view`` without the facts expired now (the same object when none is). An indexed
        view's count leaves them out too (its items come through ``keep``)."""
        max_age_ms = await self.max_age(view.partition)
        if isinstance(view, IndexedView):
            if cannot_expire(view, max_age_ms):
                return view
            hidden = await self._expired_indexed(view, max_age_ms)
            if hidden and self.found_expired is not None:
                self.found_expired(view.partition)
            # the same version of the same table: what reads keep on it stays shared
            return replace(view, count=max(0, view.count - hidden)) if hidden else view
        held = self._state(view, max_age_ms)
        if held.filtered is None:
            keep = ~np.isin(np.fromiter((it.n for it in view.items), np.int64, view.size),
                            np.fromiter(held.hidden, np.int64, len(held.hidden)))
            held.filtered = PartitionSnapshot(*_rows(view, keep), view.head, view.tombstones,
                                              view.ops)
        return held.filtered

    async def split(self, view: ReadView) -> tuple[ReadView, frozenset[int]]:
        """What recall and search rank: a snapshot as it is with the numbers to leave out of
        their answers (``hidden``), or an indexed view counting the expired out."""
        if isinstance(view, IndexedView):
            return await self.live(view), frozenset()
        return view, await self.hidden(view)

    async def hidden(self, view: ReadView) -> frozenset[int]:
        """Numbers of a snapshot's facts expired now, for reads that rank the snapshot itself
        and leave those out of what they return (its derived structures are kept: a filtered
        copy would rebuild them at every version). None for an indexed view: its candidates
        come through ``keep``."""
        if isinstance(view, IndexedView):
            return frozenset()
        return self._state(view, await self.max_age(view.partition)).hidden

    def _state(self, view: PartitionSnapshot, max_age_ms: int | None) -> _Hidden:
        """What is expired in ``view`` now; kept until its next expiry (or a new version)."""
        now = now_ms()
        held = self._views.get(view.partition)
        if held is not None and held.view is view and held.max_age_ms == max_age_ms \
                and now < held.until:
            self._views.move_to_end(view.partition)
            return held
        if cannot_expire(view, max_age_ms):  # no item's expiry is read: none has one
            held = _Hidden(view, max_age_ms, frozenset(), np.inf, view)
        else:
            expiry = view.cached(f"retention:{max_age_ms}",
                                 lambda s: _expiries(s.items, max_age_ms))
            gone = expiry <= now
            later = expiry[~gone]
            hidden = frozenset(view.items[i].n for i in np.flatnonzero(gone))
            held = _Hidden(view, max_age_ms, hidden, float(later.min()) if len(later) else np.inf,
                           None if hidden else view)
        if held.hidden and self.found_expired is not None:
            self.found_expired(view.partition)
        self._views[view.partition] = held
        self._views.move_to_end(view.partition)
        while len(self._views) > _VIEWS:
            self._views.popitem(last=False)
        return held

    async def _expired_indexed(self, view: IndexedView, max_age_ms: int | None) -> int:
        _, expiry = await self._indexed_expiries(view, max_age_ms)
        return int(np.count_nonzero(expiry <= now_ms()))

    async def _indexed_expiries(self, view: IndexedView, max_age_ms: int | None
                                ) -> tuple[np.ndarray, np.ndarray]:
        """Numbers and expiries of an indexed partition's live items (read once per version)."""
        key = (view.partition, view.version)
        held = self._lifetimes.get(key)
        if held is None:
            numbers, updated, attrs = await self.store.lifetimes(view)
            own = np.array([_own_expiry(a) for a in attrs], dtype=np.float64)
            held = (numbers, own, updated.astype(np.float64))
            self._lifetimes[key] = held
            while len(self._lifetimes) > 16:
                self._lifetimes.popitem(last=False)
        numbers, own, updated = held
        if max_age_ms is None:
            return numbers, own
        return numbers, np.minimum(own, updated + max_age_ms)

    async def expired(self, view: ReadView, max_age_ms: int | None) -> list[int]:
        """Numbers of the facts in ``view`` expired now (what the sweep forgets)."""
        now = now_ms()
        if isinstance(view, IndexedView):
            if cannot_expire(view, max_age_ms):
                return []
            numbers, expiry = await self._indexed_expiries(view, max_age_ms)
            return sorted(int(n) for n in numbers[expiry <= now])
        return [it.n for it in view.items
                if (e := expires_at(it, max_age_ms)) is not None and e <= now]

    def due(self, view: PartitionSnapshot, max_age_ms: int | None,
            within_ms: int | None = None) -> list[tuple[Item, int]]:
        """The facts of ``view`` that expire (within ``within_ms`` from now, else ever) with
        when, soonest first (the console's "facts due")."""
        horizon = None if within_ms is None else now_ms() + within_ms
        found = [(it, e) for it in view.items
                 if (e := expires_at(it, max_age_ms)) is not None
                 and (horizon is None or e <= horizon)]
        return sorted(found, key=lambda pair: (pair[1], pair[0].n))


def cannot_expire(view: ReadView, max_age_ms: int | None) -> bool:
    """Whether no fact of a partition can have expired: no max age, and its head carries
    that no live fact has an expiry of its own (a head of older layout does not say: its
    facts are read)."""
    return max_age_ms is None and view.head.expiring == 0


def _own_expiry(raw: str | None) -> float:
    """The ``expiresAt`` of a row's record fields (JSON), ``inf`` if none."""
    if not raw or EXPIRES not in raw:
        return float("inf")
    value = json.loads(raw).get(EXPIRES)
    return float(_ms(value)) if isinstance(value, str) else float("inf")
