"""The format gate: a store is read in this release's format (``store/formats.py``) by every
door (the server, the CLI, ``Memory.open``), brought to it on first open.

Each step from an older format works in place on the partitions through the core's doors
(``semmem.stored.ports.Holdings``: the write path's compare-and-swap commits, the delete path,
the listing records derived from the data): run again — after a crash, or by another process
opening the old store at the same time — it finds done what is done and does the rest, so
the store is never half in one format for a reader and no item is made twice. The new format
is recorded (one registry entry) only once every step is done; before the first, the model id
is recorded as this release does (``store/identity.py``: ``fenced``), which the releases up to
902e632 refuse. A store of a format newer
than this release's is refused. A store opened with a model other than its own (``reindex``,
``check``) is left as it is: the steps embed, and its next open with its model upgrades it.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any, Protocol

from semmem.errors import Unavailable
from semmem.store.formats import FORMAT, KEY, format_of
from semmem.store.identity import MODEL_ID, fenced, model_of
from semmem.stored.apart import items_apart
from semmem.stored.marks import written_format
from semmem.stored.ports import Apart
from semmem.stored.upgrade import Hook, items_from_facts, listings_from_partition

if TYPE_CHECKING:
    from semmem.embedding.embedder import Embedder
    from semmem.store.tables import Store

log = logging.getLogger("semmem.upgrade")


class Opened(Apart, Protocol):
    """A store opened with its model, and the core's doors the steps need (``Memory`` is one)."""

    @property
    def store(self) -> Store:
        """The store whose format is read and recorded."""
        ...

    @property
    def embedder(self) -> Embedder:
        """The model the store is opened with (a store of another model is left alone)."""
        ...

    @property
    def uri(self) -> str:
        """Where the store is (for the log)."""
        ...


# Each format's step to the next (each given the core's doors it needs: ``Memory`` is them).
STEPS: dict[int, Callable[[Apart, Hook | None], Awaitable[int]]] = {
    1: items_from_facts, 2: listings_from_partition, 3: items_apart}


async def upgrade(opened: Opened, *, hook: Hook | None = None) -> int:
    """Bring ``opened``'s store to ``FORMAT`` (nothing when it is); the format it is in.
    ``hook``: called after each step of each partition (tests interrupt it there).

    Raises:
        Unavailable: the store was written by a later release (a newer format).
    """
    meta = await opened.store.meta()
    found = format_of(meta)
    if found > FORMAT:
        raise Unavailable(f"store {opened.uri} is of format {found}, written by a later "
                          f"release; this one reads format {FORMAT} and earlier")
    if meta is not None and model_of(meta) != opened.embedder.model_id:
        return found  # opened with another model (reindex, check): the steps embed
    if meta is not None and KEY not in meta:
        found = await _detected(opened, meta)
    if meta is not None and MODEL_ID not in meta:
        # Fenced before the first step: from now on an earlier release refuses the store
        # (``store/identity.py``), even one opening it half upgraded.
        now = await opened.store.meta() or meta
        await opened.store.set_meta(fenced(now, opened.embedder.model_id))
    while found < FORMAT:
        changed = await STEPS[found](opened, hook)
        log.info("store %s upgraded from format %d to %d (%d changed)", opened.uri, found,
                 found + 1, changed)
        found += 1
        meta = await opened.store.meta() or {}  # as it is now (only this member changes)
        await opened.store.set_meta({**meta, KEY: found})
    return found


async def _detected(opened: Opened, meta: dict[str, Any]) -> int:
    """The format of a store that records none, told by what its release wrote
    (``stored/marks.py``), recorded before any step writes: a step's own writes (keyed store
    pieces) must not make a rerun, or another process opening the store meanwhile, read it as
    another format. A format recorded while the marks were read wins."""
    found = await written_format(opened)
    now = await opened.store.meta() or meta
    if KEY in now:
        return format_of(now)
    await opened.store.set_meta({**now, KEY: found})
    return found
