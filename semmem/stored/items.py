"""Store items over keyed items: get, put, delete, search and refresh by namespace and key.

An item is the keyed item ``Address("store", key)`` of its namespace's partition
(``namespaces.partition_of``). Its pieces are its index texts (one piece per text, a long one
cut into pieces of at most 640 characters; an item without index texts has one piece, its key,
that no query scores); the first piece's ``store`` record field holds the value, the creation
and update times and the TTL, and every piece carries the expiry (``expiresAt``), so a put is
one write (``Keyed.commit``). Pieces of the ``store`` space are never surfaced
(``Item.surfaced``): the model's tools neither see nor edit them.
"""

from __future__ import annotations

import asyncio
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from semmem import rules
from semmem.conversations.pieces import cut
from semmem.errors import Unavailable
from semmem.items import EXPIRES, Item, iso, now_ms, parse_iso
from semmem.items.address import KEYED, Address, address_of, space_tag
from semmem.keyed.index import addresses
from semmem.keyed.items import ATTEMPTS, Held, Keyed, Moved
from semmem.offload import off_loop, off_loop_over
from semmem.rules import Decision
from semmem.store.rows import NEW, ItemRow
from semmem.store.views import IndexedView, ItemSet, WriteView
from semmem.stored.fields import STORE
from semmem.stored.filters import matches
from semmem.stored.namespaces import Registry, namespace_of, partition_of
from semmem.targets import tombstone

if TYPE_CHECKING:
    from semmem.stored.ports import Core

SPACE = "store"  # the keyed space of store items
EMBED_BATCH = 64
# A value's texts are cut like a message but into larger pieces (target, limit, least, in
# characters): a search scores an item by its best piece, and no budget packs these lines.
VALUE_PIECES = (360, 640, 80)
PARALLEL = 16  # partitions a search reads at once (their tables' latest versions: I/O)
# The model-queue lane of searches not bound to one partition (a store-wide token's): one lane
# for all of them, so they take turns with the partitions' lanes whatever prefixes they name
# (no partition can be named so: a label holds no control character).
STORE_WIDE = "\x00store-wide"
ENTRIES = "stored:entries"  # a snapshot's items, as searches read them (``ItemSet.cached``)


@dataclass(frozen=True)
class Record:
    """One store item as read: where it is, its value and times (epoch ms)."""

    namespace: tuple[str, ...]
    key: str
    value: dict[str, Any]
    created: int
    updated: int
    ttl: float | None
    expires: int | None
    numbers: tuple[int, ...]
    indexed: bool = True

    def public(self, score: float | None = None, *, scored: bool = False) -> dict[str, Any]:
        """As answered: ``namespace, key, value, createdAt, updatedAt, expiresAt`` (and
        ``score`` in a search)."""
        out: dict[str, Any] = {"namespace": list(self.namespace), "key": self.key,
                               "value": self.value, "createdAt": iso(self.created),
                               "updatedAt": iso(self.updated),
                               "expiresAt": None if self.expires is None else iso(self.expires)}
        if scored:
            out["score"] = score
        return out


def record_of(namespace: tuple[str, ...], key: str, pieces: Sequence[Item]) -> Record | None:
    """The item ``pieces`` (live, number order) make up, ``None`` when none holds its value."""
    head = next((it for it in pieces if isinstance(it.attrs.get(STORE), dict)
                 and "value" in it.attrs[STORE]), None)
    if head is None:
        return None
    body = head.attrs[STORE]
    expiry = head.attrs.get(EXPIRES)
    ttl = body.get("ttl")
    return Record(namespace, key, body["value"], int(body.get("created", head.ts)),
                  int(body.get("updated", head.updated)),
                  float(ttl) if isinstance(ttl, int | float) else None,
                  parse_iso(expiry) if isinstance(expiry, str) else None,
                  tuple(it.n for it in pieces), body.get("indexed") is not False)


@dataclass(frozen=True)
class Put:
    """One item to put: its key, value, index texts and TTL (minutes)."""

    key: str
    value: dict[str, Any]
    texts: tuple[str, ...]
    ttl: float | None
    # An upgrade's (``stored/upgrade.py``): the facts an earlier release kept this item as,
    # the last one its value. They are forgotten in the same write and the item keeps the
    # last one's times and expiry; when it is no longer there as it was read (forgotten,
    # changed), the item is not put.
    former: tuple[Item, ...] = ()

    def kept(self, view: WriteView) -> list[Item] | None:
        """The former facts ``view`` still holds, ``None`` when the last is not there
        unchanged."""
        if not self.former:
            return None
        last = view.get(self.former[-1].n)
        if last is None or last.text != self.former[-1].text:
            return None
        return [it for f in self.former if (it := view.get(f.n)) is not None]


@dataclass(frozen=True)
class Entry:
    """One item of a partition as a search reads it: its record, the piece holding its value
    (what "expired" is tested on: every piece has its times), and the rows of its index
    pieces' vectors (none when it is not indexed)."""

    record: Record
    head: Item
    rows: np.ndarray


def _entries(namespace: tuple[str, ...], pieces: list[tuple[int, Item]]) -> list[Entry]:
    """The items ``pieces`` (row, piece; number order) make up."""
    grouped: dict[Address, list[tuple[int, Item]]] = defaultdict(list)
    for row, it in pieces:
        address = address_of(it)
        if address is not None and address.space == SPACE:
            grouped[address].append((row, it))
    out = []
    for address, held in grouped.items():
        record = record_of(namespace, address.key, [it for _, it in held])
        if record is None:
            continue
        head = next(it for _, it in held if "value" in it.attrs.get(STORE, {}))
        rows = np.array([r for r, _ in held] if record.indexed else [], dtype=np.int64)
        out.append(Entry(record, head, rows))
    return out


class StoreItems:
    """The application's store items of a memory: in the application's core
    (``core.application()``: its own store, ``semmem.store.apart``), whatever core is given;
    ``in_place``: in the given core's own store (the format gate's step from format 1, which
    forgets an earlier release's facts in the same write)."""

    def __init__(self, core: Core, *, in_place: bool = False) -> None:
        self.owner, self._resolved = core, in_place
        self.core = core
        self.keyed = Keyed(core)
        self.registry = Registry(core)

    async def ready(self) -> StoreItems:
        """This, its core resolved to the application's (once)."""
        if not self._resolved:
            self.core = await self.owner.application()
            self.keyed, self.registry = Keyed(self.core), Registry(self.core)
            self._resolved = True
        return self

    async def get(self, namespace: tuple[str, ...], key: str) -> Record | None:
        """The live item at ``namespace``/``key`` (through the address index)."""
        await self.ready()
        pieces = await self.keyed.pieces(partition_of(namespace), Address.of(SPACE, key))
        return record_of(namespace, key, pieces)

    async def delete(self, namespace: tuple[str, ...], key: str) -> list[int]:
        """Forget the item through the forget path; its piece numbers."""
        await self.ready()
        return await self.keyed.forget(partition_of(namespace), Address.of(SPACE, key))

    async def put(self, namespace: tuple[str, ...], key: str, value: dict[str, Any],
                  texts: Sequence[str], ttl: float | None) -> dict[str, Any]:
        """Replace the item by ``value`` with ``texts`` indexed and expiry ``ttl`` minutes
        from now, in one write (its creation time kept when it already lives)."""
        return (await self.put_many(namespace, [Put(key, value, tuple(texts), ttl)]))[0]

    async def put_many(self, namespace: tuple[str, ...], puts: Sequence[Put]
                       ) -> list[dict[str, Any]]:
        """``put`` of several items of one namespace in one write (a key given twice: the
        last value); each put's ``{"items": [n…], "replaced": [n…]}``."""
        await self.ready()
        partition = partition_of(namespace)
        last = {p.key: p for p in puts}
        addresses_ = {key: Address.of(SPACE, key) for key in last}
        bodies = await off_loop(sum(len(t) for p in last.values() for t in p.texts),
                                _bodies, last.values())
        flat = [t for texts in bodies.values() for t in texts]
        vectors: list[np.ndarray] = []
        for start in range(0, len(flat), EMBED_BATCH):
            vectors.extend(await self.core.model.embed(flat[start:start + EMBED_BATCH],
                                                       caller=partition))
        alive = await self.core.liveness(partition)
        ttl_ms = self.core.idempotency_ttl_ms
        looked: list[Held] = []

        def decide(view: WriteView, _: list[Item]) -> Decision:
            held: dict[Address, list[Item]] = {a: [] for a in addresses_.values()}
            for it in view.items:
                address = address_of(it)
                if address in held:
                    held[address].append(it)
            if any(old for old in held.values()) and not looked[-1].numbers:
                raise Moved("pieces appeared since the lookup")  # so the write purges them
            now, n, rows = now_ms(), view.hwm, []
            done: dict[str, dict[str, Any]] = {}
            at = iter(vectors)
            for key, p in last.items():
                old = held[addresses_[key]]
                former = p.kept(view)
                if p.former and former is None:  # gone meanwhile: stays gone
                    for _piece in bodies[key]:  # its vectors, unused
                        next(at)
                    done[key] = {"status": "gone", "items": [], "replaced": []}
                    continue
                before = record_of(namespace, key, [it for it in old if alive(it)])
                expiry = {EXPIRES: iso(now + round(p.ttl * 60_000))} if p.ttl is not None \
                    else {}
                head = {"value": p.value, "created": before.created if before else now,
                        "updated": now, "ttl": p.ttl, "indexed": bool(p.texts)}
                ts = updated = now
                if former:
                    old, last_ = [*old, *former], former[-1]
                    ts, updated = last_.ts, last_.updated
                    head.update(created=ts, updated=updated)
                    expiry = {EXPIRES: last_.attrs[EXPIRES]} if EXPIRES in last_.attrs else {}
                rows += [tombstone(it, now) for it in old]
                first = n + 1
                for i, text in enumerate(bodies[key]):
                    n += 1
                    attrs = {KEYED: addresses_[key].public(),
                             STORE: head if i == 0 else {"part": i}, **expiry}
                    rows.append(ItemRow(n, text, next(at), ts, updated, 1, attrs=attrs,
                                        created=NEW))
                done[key] = {"status": "stored", "items": list(range(first, n + 1)),
                             "replaced": [it.n for it in old]}
            return rules.mutation(None, {"puts": done}, ttl_ms, rows, n) if rows \
                else {"puts": done}

        for _ in range(ATTEMPTS):
            view = await self.core.latest_view(partition)
            numbers = [n for a in addresses_.values()
                       for n in await self.keyed.numbers(view, a)]
            numbers += [f.n for p in last.values() for f in p.former]
            looked.append(Held(next(iter(addresses_.values())), tuple(sorted(numbers)),
                               view.hwm, view))
            try:
                result = await self.keyed.commit(partition, looked[-1], decide,
                                                 dropped=bool(numbers))
            except (Moved, rules.MissingRows):
                continue
            return [result["puts"][p.key] for p in puts]
        raise Unavailable("the partition kept changing under this write; retry it")

    async def entries(self, partition: str) -> tuple[list[Entry], np.ndarray, rules.Alive]:
        """Every item of a partition (expired ones included: test ``alive`` on an entry's
        head), the vectors its rows index, and the partition's test of "not expired now".
        Below the index threshold, built once per snapshot from the address index (kept with
        the snapshot until the next write); past it, read through the ``tags`` index."""
        await self.ready()
        view = await self.core.latest_view(partition)
        alive = await self.core.liveness(partition)
        namespace = namespace_of(partition)
        if isinstance(view, IndexedView):
            where = f"array_has_all(tags, ['{space_tag(SPACE)}'])"
            got = await self.core.numbered(view, numbers=await self.core.numbers_where(
                view, where))
            return _entries(namespace, list(enumerate(got.items))), got.vectors, alive

        def build(items: ItemSet) -> list[Entry]:
            index = addresses(items)
            numbers = sorted(n for a, ns in index.numbers.items() if a.space == SPACE
                             for n in ns)
            return _entries(namespace, [(items.by_n[n], items.items[items.by_n[n]])
                                        for n in numbers if n in items.by_n])

        if ENTRIES in view.derived:
            return view.cached(ENTRIES, build), view.vectors, alive
        # built once per version, going through every item: past a few, in a worker thread
        return await off_loop_over(len(view.items), view.cached, ENTRIES, build), \
            view.vectors, alive

    async def live(self, partition: str) -> bool:
        """Whether the partition holds a live store item (a namespace ``list`` answers)."""
        await self.ready()
        view = await self.core.latest_view(partition)
        if isinstance(view, IndexedView):
            entries, _, alive = await self.entries(partition)
            return any(alive(e.head) for e in entries)
        alive = await self.core.liveness(partition)
        return any(a.space == SPACE and (it := view.get(ns[0])) is not None and alive(it)
                   for a, ns in addresses(view).numbers.items() if ns)

    async def search(self, prefix: tuple[str, ...], query: str | None,
                     wanted: dict[str, Any], limit: int, offset: int, *,
                     only: str | None = None) -> list[tuple[Record, float | None]]:
        """The items under ``prefix`` whose value passes ``wanted`` (applied before ranking),
        best first by the cosine of ``query`` with their best index piece (LangGraph's score),
        else the latest updated first; ``offset``/``limit`` paged. ``only``: the one
        partition a bound caller may read."""
        await self.ready()
        partitions = [p for p in await self.registry.partitions(prefix)
                      if only is None or p == only]
        # a query, embedded as one (e5: its prefix, one window), charged to the partition
        # searched: a bound caller's; a store-wide search's lane is every such search's
        qvec = (await self.core.model.embed([query], query=True,
                                            caller=only or STORE_WIDE))[0] if query else None
        gate = asyncio.Semaphore(PARALLEL)

        async def read(partition: str) -> tuple[list[Entry], np.ndarray, rules.Alive]:
            async with gate:
                return await self.entries(partition)

        read_ = await asyncio.gather(*map(read, partitions))
        # the filter and the ranking go through every item read: past a few, in a worker
        # thread (one hop for the search), so a wide filter holds no other request
        return await off_loop_over(sum(len(entries) for entries, _, _ in read_), _ranked,
                                   read_, qvec, wanted, limit, offset)

    async def refresh(self, records: Sequence[Record]) -> None:
        """Move each item's expiry to its TTL from now, one write per partition; its
        ``updatedAt`` stays as it is."""
        await self.ready()
        by_partition: dict[str, list[Record]] = defaultdict(list)
        for r in records:
            if r.ttl is not None:
                by_partition[partition_of(r.namespace)].append(r)
        for partition, found in by_partition.items():
            numbers = sorted({n for r in found for n in r.numbers})
            ttls = {n: r.ttl for r in found for n in r.numbers}
            alive = await self.core.liveness(partition)

            def plan(view: WriteView, numbers: list[int] = numbers,
                     ttls: dict[int, float | None] = ttls, alive: Any = alive) -> Decision:
                now, rows = now_ms(), []
                for n in numbers:
                    it, ttl = view.get(n), ttls[n]
                    if it is None or not alive(it) or ttl is None:
                        continue  # gone or expired meanwhile: a refresh brings nothing back
                    attrs = {**it.attrs, EXPIRES: iso(now + round(ttl * 60_000))}
                    rows.append(ItemRow(n, it.text, rules.vector_of(view, n), it.ts, now,
                                        it.revision + 1, attrs=attrs, created=it.born))
                return rules.mutation(None, {"refreshed": len(rows)}, 0, rows) if rows \
                    else {"refreshed": 0}

            await self.core.commit(partition, plan, None, numbers=numbers)


def _ranked(read: Sequence[tuple[list[Entry], np.ndarray, rules.Alive]],
            qvec: np.ndarray | None, wanted: dict[str, Any], limit: int, offset: int
            ) -> list[tuple[Record, float | None]]:
    """The live entries of ``read`` (each partition's, with its vectors and its test of
    "not expired now") whose value passes ``wanted``, scored by their best piece's cosine with
    ``qvec``, best first (else the latest updated first), ``offset``/``limit`` paged."""
    ranked: list[tuple[Record, float | None]] = []
    for entries, matrix, alive in read:
        kept = [e for e in entries if alive(e.head) and matches(e.record.value, wanted)]
        scores: dict[int, float] = {}
        scored = [i for i, e in enumerate(kept) if len(e.rows)] if qvec is not None else []
        if scored:  # one product for every piece of every candidate, then each one's best
            flat = np.concatenate([kept[i].rows for i in scored])
            starts = np.cumsum([0] + [len(kept[i].rows) for i in scored[:-1]])
            best = np.maximum.reduceat(matrix[flat] @ qvec, starts)
            scores = {i: float(b) for i, b in zip(scored, best, strict=True)}
        ranked.extend((e.record, scores.get(i)) for i, e in enumerate(kept))
    ranked.sort(key=lambda pair: (pair[1] is None, -(pair[1] or 0.0), -pair[0].updated,
                                  pair[0].namespace, pair[0].key))
    return ranked[offset:offset + limit]


def _bodies(puts: Iterable[Put]) -> dict[str, list[str]]:
    """Each put's pieces: its index texts cut (the key alone when it has none)."""
    bodies: dict[str, list[str]] = {}
    for p in puts:
        pieces = [piece for t in p.texts for piece in cut(t, *VALUE_PIECES)]
        bodies[p.key] = pieces or [p.key]
    return bodies
