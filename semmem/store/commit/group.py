"""What one group commit decides on: one lookup for the group's writes (``joined``), and
the write view each next write sees (``after``)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

import numpy as np

from semmem.audience import not_models
from semmem.store.rows import Lookup, Mutation
from semmem.store.schema import Batch
from semmem.store.views import WriteView, expiring, not_models_bytes, text_bytes


def joined(lookups: Sequence[Lookup]) -> Lookup:
    """One lookup for a group: every record, number and text any of its writes asks for."""
    return Lookup(ops=sorted({k for lk in lookups for k in lk.ops}),
                  numbers=sorted({n for lk in lookups for n in lk.numbers}),
                  texts=list(dict.fromkeys(t for lk in lookups for t in lk.texts)))


def after(view: WriteView, m: Mutation) -> WriteView:
    """``view`` as the next write of the same group sees it: ``m``'s rows applied."""
    batch = Batch.of(view.head, [m])
    items, vectors, tombstones = batch.changes(view.model or "")
    keep = [(it, view.vectors[i]) for i, it in enumerate(view.items)
            if it.n not in batch.items]
    merged = sorted(keep + list(zip(items, vectors, strict=True)), key=lambda p: p[0].n)
    added = sum(1 for it in items if view.get(it.n) is None)
    dropped = sum(1 for n in tombstones if view.get(n) is not None)
    head = replace(view.head, hwm=batch.hwm)
    # The rows a write replaces were looked up (its numbers): they are in the view.
    old = [it for n in batch.items if (it := view.get(n)) is not None]
    size, others = view.text_bytes, view.application_bytes
    if size is not None:
        size += text_bytes(items) - text_bytes(old)
    if others is not None:
        others += not_models_bytes(items) - not_models_bytes(old)
    return WriteView(
        [it for it, _ in merged],
        np.array([v for _, v in merged], np.float32).reshape(-1, view.vectors.shape[1]),
        head, view.live + added - dropped, {**view.tombstones, **tombstones},
        {**view.ops, **batch.ops}, size,
        expiring=view.expiring + expiring(items) - expiring(old),
        application=view.application + not_models(items) - not_models(old),
        application_bytes=others)
