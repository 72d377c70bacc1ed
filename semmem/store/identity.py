"""The store's identity record: one per store, in the registry's metadata (``meta``): its
``id``, its ``format``, its ``model`` and a ``generation`` that every store-wide change moves
(a reindex, with the new model, before it re-embeds anything; a restore; an upgrade: any
change of the model or the format recorded moves it).

Every process holds the record it opened the store under (``Store.open``) and compares it with
the store's whenever it reads the registry's policies again (``Store.retention_policies``: at
most ``REFRESH_S`` apart, before reads and writes, and only when the registry's version moved:
no request of its own). A process that finds itself stale refuses every write from then on
with one line naming the change (``StoreChanged``) and, being unable to serve, stops (the
server's ``on_fatal``). The one move it takes on instead: the store upgraded, model
unchanged, to this release's own format (a replica's format gate, starting beside it). The
commits of a partition are fenced on its model besides (its head
row's: a write decided on a partition a reindex rewrote is refused), so no partition holds
vectors of two models.
"""

from __future__ import annotations

import secrets
from dataclasses import dataclass
from typing import Any

from semmem.errors import StoreChanged
from semmem.store import formats

ID = "id"
GENERATION = "generation"
# The model's id, as this release records it; ``model`` holds a sentence no earlier release
# matches (``fenced``): releases up to 902e632 check only ``model`` against their own model's
# id, so they refuse a store this release made or upgraded, with that sentence in their line.
MODEL_ID = "modelId"
MODEL = "model"


@dataclass(frozen=True)
class Identity:
    """What a process holds of the store it opened."""

    model: str | None
    format: int
    generation: int

    @classmethod
    def of(cls, meta: dict[str, Any] | None) -> Identity:
        """The identity a store's metadata records."""
        return cls(model_of(meta), formats.format_of(meta), generation_of(meta))

    def changed(self, now: Identity, uri: str) -> StoreChanged | None:
        """Why a process that opened the store as ``self`` may no longer write to it, now that
        it is ``now``; ``None`` while it may."""
        if now == self or (now.model == self.model and self.format < now.format
                           == formats.FORMAT):
            return None  # the same, or upgraded to this release's format (by a replica)
        what = [f"its model is now {now.model!r}" if now.model != self.model else "",
                f"its format is now {now.format}" if now.format != self.format else "",
                f"generation {self.generation} → {now.generation}"
                if now.generation != self.generation else ""]
        return StoreChanged(
            f"store {uri} was changed by another process since this one opened it (a reindex, "
            f"restore or upgrade: {', '.join(w for w in what if w)}); this process writes no "
            f"more to it and stops: start it again (with the store's model)",
            {"generation": now.generation, "opened": self.generation})


def model_of(meta: dict[str, Any] | None) -> str | None:
    """The model id a store's metadata records: ``modelId`` (this release's record), else
    ``model`` (an earlier release's store, not yet upgraded)."""
    meta = meta or {}
    found = meta.get(MODEL_ID, meta.get(MODEL))
    return found if isinstance(found, str) else None


def fenced(meta: dict[str, Any], model_id: str) -> dict[str, Any]:
    """``meta`` recording ``model_id`` as this release does: in ``modelId``, and in ``model``
    as a sentence that is no model's id, which an earlier release (checking ``model`` alone)
    refuses with it in its mismatch line."""
    return {**meta, MODEL_ID: model_id,
            MODEL: f"a store of format {formats.FORMAT} or newer, upgraded by a later semmem "
                   f"release: serve it with that release, never reindex it with this one; "
                   f"its model: {model_id}"}


def generation_of(meta: dict[str, Any] | None) -> int:
    """The generation a store's metadata records (0: none yet, an older release's store)."""
    found = (meta or {}).get(GENERATION)
    return found if isinstance(found, int) and not isinstance(found, bool) else 0


def created(meta: dict[str, Any]) -> dict[str, Any]:
    """A new store's metadata with its identity: a new id, generation 1."""
    return {**meta, ID: secrets.token_hex(16), GENERATION: 1}


def moved(meta: dict[str, Any]) -> dict[str, Any]:
    """``meta`` one generation on (a store-wide change); an older store gets its id too."""
    return {ID: secrets.token_hex(16), **meta, GENERATION: generation_of(meta) + 1}
