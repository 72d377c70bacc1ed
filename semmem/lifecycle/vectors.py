"""``semmem check``'s look at a partition's vectors: are they the store's model's?

Two signs, both cheap: a live item whose row names another model (written by a process serving
the store under another model), and a sample of the live items re-embedded now whose stored
vectors are not (nearly) those the store's model makes of their texts (a row labelled right,
embedded otherwise). ``--repair`` re-embeds the whole partition, as ``semmem reindex`` does one.
The check needs the store's own model: run with another, it says so and looks no further.
"""

from __future__ import annotations

import functools
from typing import TYPE_CHECKING

import numpy as np

from semmem.importing import reembed
from semmem.store.identity import model_of

if TYPE_CHECKING:
    from semmem.embedding.queue import ModelQueue
    from semmem.store.tables import Store

SAMPLE = 16  # live items re-embedded per partition, spread over it
SAME = 0.99  # the least cosine of a stored vector to its text embedded again by its model


async def check_vectors(store: Store, model: ModelQueue, partition: str, *,
                        repair: bool = False) -> list[str]:
    """What is wrong with ``partition``'s vectors (nothing: ``[]``); with ``repair``, the
    partition re-embedded by the store's model when something was."""
    stored = model_of(await store.meta())
    if stored != model.embedder.model_id:
        return []  # another model: nothing to compare with (the open said so already)
    snap = await store.snapshot(partition)
    if not snap.items:
        return []
    labelled = [it.n for it in snap.items if it.model is not None and it.model != stored]
    step = max(1, len(snap.items) // SAMPLE)
    picked = list(range(0, len(snap.items), step))[:SAMPLE]
    fresh = np.asarray(await model.embed([snap.items[i].text for i in picked], caller=partition),
                       np.float32)
    kept = np.asarray(snap.vectors[picked], np.float32)
    problems = []
    if labelled:
        problems.append(f"{len(labelled)} live item(s) embedded by another model than the "
                        f"store's {stored!r} (e.g. n={labelled[0]})")
    if kept.shape != fresh.shape:
        problems.append(f"vectors of width {kept.shape[1]}, the store's model makes "
                        f"{fresh.shape[1]}")
    else:
        cos = np.sum(kept * fresh, axis=1) / np.maximum(
            np.linalg.norm(kept, axis=1) * np.linalg.norm(fresh, axis=1), 1e-12)
        off = [snap.items[picked[i]].n for i in np.flatnonzero(cos < SAME)]
        if off:
            problems.append(f"{len(off)} of {len(picked)} sampled vectors are not what the "
                            f"store's model makes of their text (e.g. n={off[0]})")
    if problems and repair:
        await reembed(store, functools.partial(model.embed, caller=partition), [partition], 256,
                      None)
        problems = [p + " (re-embedded)" for p in problems]
    return problems
