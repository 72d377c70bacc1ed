"""An embedder that holds the model thread at a marked text until released: a step of a
real server put on hold on purpose (a race made, not hoped for).

The fake embedder's vectors (``HashingEmbedder``); each batch holding a text with ``mark``
creates ``<folder>/held`` and waits until ``<folder>/release`` exists (then removes both, so
the next marked batch holds again). Across processes, so a test drives a ``semmem serve`` it
started with ``launch(folder)``.
"""

from __future__ import annotations

import time
from pathlib import Path

from semmem.embedding.fakes import HashingEmbedder
from semmem.items import Vectors

MARK = "HOLD-THE-MODEL-HERE"


class GatedEmbedder(HashingEmbedder):
    """``HashingEmbedder`` held at each batch holding ``mark``."""

    def __init__(self, folder: str, mark: str = MARK) -> None:
        super().__init__()
        self.folder = Path(folder)
        self.mark = mark

    def embed_batch(self, texts: list[str]) -> Vectors:
        """Vectors, after the hold when ``texts`` hold the mark."""
        if any(self.mark in t for t in texts):
            (self.folder / "held").touch()
            while not (self.folder / "release").exists():
                time.sleep(0.005)
            (self.folder / "release").unlink()
            (self.folder / "held").unlink()
        return super().embed_batch(texts)


def launch(folder: Path) -> str:
    """``semmem serve``'s own code path with a ``GatedEmbedder`` on ``folder``."""
    return ("from tests.support.gated import GatedEmbedder; from semmem.settings import "
            "Settings; from semmem.web.server import serve; "
            f"serve(Settings(), embedder=GatedEmbedder({str(folder)!r}))")


def wait_for(path: Path, timeout: float = 120.0) -> None:
    """Until ``path`` exists (a condition, polled)."""
    until = time.monotonic() + timeout
    while not path.exists():
        assert time.monotonic() < until, f"{path.name} never came"
        time.sleep(0.005)
