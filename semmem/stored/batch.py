"""One ``POST /store`` batch run in order: each operation's result, then one refresh write per
partition for the items read with ``refreshTtl``."""

from __future__ import annotations

from typing import Any

from semmem.errors import Forbidden
from semmem.stored.items import Put, Record, StoreItems
from semmem.stored.namespaces import namespace_of, partition_of
from semmem.stored.requests import StoreOp


async def run(items: StoreItems, ops: list[StoreOp], *, only: str | None = None
              ) -> list[Any]:
    """The results of ``ops``, in order. ``only``: the one partition a bound token may reach
    (a get or put elsewhere is refused; searches and listings see nothing else).

    Raises:
        Forbidden: an operation outside ``only``. Whatever the store raises.
    """
    if only is not None:
        for op in ops:
            if op.op in ("get", "put") and partition_of(op.namespace) != only:
                raise Forbidden("this token is bound to another partition")
    results: list[Any] = [None] * len(ops)
    refresh: list[Record] = []
    i = 0
    while i < len(ops):
        end = i
        while end < len(ops) and ops[end].op == "put" and ops[end].value is not None:
            end += 1
        if end > i:  # a run of puts: one write per namespace (nothing reads in between)
            await _puts(items, ops, range(i, end), results)
            i = end
            continue
        op = ops[i]
        results[i] = await _one(items, op, refresh, only)
        i += 1
    if refresh:
        await items.refresh(refresh)
    return results


async def _puts(items: StoreItems, ops: list[StoreOp], run: range, results: list[Any]
                ) -> None:
    by_namespace: dict[tuple[str, ...], list[int]] = {}
    for i in run:
        by_namespace.setdefault(ops[i].namespace, []).append(i)
    for namespace, at in by_namespace.items():
        written = await items.put_many(namespace, [
            Put(ops[i].key, ops[i].value or {}, ops[i].index, ops[i].ttl) for i in at])
        for i, result in zip(at, written, strict=True):
            results[i] = {"items": result["items"]}


async def _one(items: StoreItems, op: StoreOp, refresh: list[Record], only: str | None
               ) -> Any:
    """One operation other than a put of a value."""
    if op.op == "get":
        record = await items.get(op.namespace, op.key)
        if record is not None and op.refresh:
            refresh.append(record)
        return None if record is None else record.public()
    if op.op == "put":  # a delete
        return {"forgotten": await items.delete(op.namespace, op.key)}
    if op.op == "search":
        found = await items.search(op.namespace, op.query, op.filter, op.limit, op.offset,
                                   only=only)
        if op.refresh:
            refresh.extend(r for r, _ in found)
        return [r.public(score, scored=True) for r, score in found]
    return await namespaces(items, op, only)


async def namespaces(items: StoreItems, op: StoreOp, only: str | None) -> list[list[str]]:
    """The namespaces holding live items that match ``op``'s conditions, cut to its depth,
    sorted and paged (from the registry: no partition listing)."""
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
