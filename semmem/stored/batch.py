"""One ``POST /store`` batch, as LangGraph's stores run one: every read (get, search, list)
answered against the store as the batch found it, in order; then one refresh write per
partition for the items read with ``refreshTtl``; then the writes, the last put or delete of
each key winning (LangGraph's ``InMemoryStore`` collects a batch's puts by key and applies them
after answering its reads; its Postgres and SQLite stores also answer reads first). So
``[put k, get k]`` answers the value ``k`` had before the batch."""

from __future__ import annotations

from typing import Any

from semmem.errors import Forbidden
from semmem.stored.items import Put, Record, StoreItems
from semmem.stored.namespaces import namespace_of, partition_of
from semmem.stored.requests import StoreOp


async def run(items: StoreItems, ops: list[StoreOp], *, only: str | None = None
              ) -> list[Any]:
    """The results of ``ops``, in order: a read's answer; a put's or delete's what the batch
    did to its key (the key's last put: ``{"items": [n…]}``, its last delete:
    ``{"forgotten": [n…]}``). ``only``: the one partition a bound token may reach (a get or
    put elsewhere is refused; searches and listings see nothing else).

    Raises:
        Forbidden: an operation outside ``only``. Whatever the store raises.
    """
    await items.ready()  # the application's core (``StoreItems``)
    if only is not None:
        for op in ops:
            if op.op in ("get", "put") and partition_of(op.namespace) != only:
                raise Forbidden("this token is bound to another partition")
    results: list[Any] = [None] * len(ops)
    refresh: list[Record] = []
    for i, op in enumerate(ops):
        if not op.writes:
            results[i] = await _read(items, op, refresh, only)
    if refresh:
        await items.refresh(refresh)
    await _writes(items, ops, results)
    return results


async def _writes(items: StoreItems, ops: list[StoreOp], results: list[Any]) -> None:
    """The batch's puts and deletes, the last of each key winning: one write for a
    namespace's puts, one forget per deleted key; each write op's result its key's."""
    last: dict[tuple[tuple[str, ...], str], int] = {}
    for i, op in enumerate(ops):
        if op.writes:
            last[(op.namespace, op.key)] = i
    by_namespace: dict[tuple[str, ...], list[int]] = {}
    for i in last.values():
        by_namespace.setdefault(ops[i].namespace, []).append(i)
    done: dict[tuple[tuple[str, ...], str], Any] = {}
    for namespace, at in by_namespace.items():
        puts = [i for i in at if ops[i].value is not None]
        if puts:
            written = await items.put_many(namespace, [
                Put(ops[i].key, ops[i].value or {}, ops[i].index, ops[i].ttl) for i in puts])
            for i, result in zip(puts, written, strict=True):
                done[(namespace, ops[i].key)] = {"items": result["items"]}
        for i in at:
            if ops[i].value is None:
                done[(namespace, ops[i].key)] = {
                    "forgotten": await items.delete(namespace, ops[i].key)}
    for i, op in enumerate(ops):
        if op.writes:
            results[i] = done[(op.namespace, op.key)]


async def _read(items: StoreItems, op: StoreOp, refresh: list[Record], only: str | None
                ) -> Any:
    """One get, search or listing (``refresh``: the items it read to refresh)."""
    if op.op == "get":
        record = await items.get(op.namespace, op.key)
        if record is not None and op.refresh:
            refresh.append(record)
        return None if record is None else record.public()
    if op.op == "search":
        if op.limit == 0:  # LangGraph's answer: nothing, and nothing read or refreshed
            return []
        found = await items.search(op.namespace, op.query, op.filter, op.limit, op.offset,
                                   only=only)
        if op.refresh:
            refresh.extend(r for r, _ in found)
        return [r.public(score, scored=True) for r, score in found]
    return await namespaces(items, op, only)


async def namespaces(items: StoreItems, op: StoreOp, only: str | None) -> list[list[str]]:
    """The namespaces holding live items that match ``op``'s conditions, cut to its depth,
    sorted and paged (from the registry: no partition listing)."""
    if op.limit == 0:
        return []
    prefix: tuple[str, ...] = ()
    for c in op.conditions:  # a literal leading prefix narrows the registry walk
        if c.kind == "prefix":
            literal = []
            for label in c.path:
                if label == "*":
                    break
                literal.append(label)
            prefix = tuple(literal) if len(literal) > len(prefix) else prefix
    found: list[tuple[str, ...]] = []  # in order: the registry's is the namespaces', and a
    for partition in await items.registry.partitions(prefix):  # cut keeps it
        if len(found) >= op.offset + op.limit:
            break  # what is answered is found: the rest is never opened
        if only is not None and partition != only:
            continue
        namespace = namespace_of(partition)
        if not all(c.fits(namespace) for c in op.conditions):
            continue
        cut = namespace if op.max_depth is None else namespace[:op.max_depth]
        if (found and found[-1] == cut) or not await items.live(partition):
            continue
        found.append(cut)
    return [list(ns) for ns in found[op.offset:op.offset + op.limit]]
