"""A fake model a test can hold: each call recorded, in the order the model thread ran it, and
held while the test keeps it closed (to line work up behind it)."""

from __future__ import annotations

import threading

from semmem.embedding.fakes import HashingEmbedder
from semmem.items import Vectors


class HeldEmbedder:
    """The fake embedder; each call's texts recorded in order, and held while ``open`` is
    clear (``entered`` says a call is in)."""

    def __init__(self) -> None:
        self.inner = HashingEmbedder()
        self.model_id = self.inner.model_id
        self.dim = self.inner.dim
        self.calls: list[list[str]] = []
        self.open = threading.Event()
        self.open.set()
        self.entered = threading.Event()

    def embed_batch(self, texts: list[str]) -> Vectors:
        """Record the call, wait while held, then embed."""
        self.calls.append(list(texts))
        self.entered.set()
        if not self.open.wait(60):
            raise TimeoutError("the test never let the model go")
        return self.inner.embed_batch(texts)

    def hold(self) -> None:
        """Hold the next calls (and forget that one came in)."""
        self.open.clear()
        self.entered.clear()

    def call_of(self, text: str) -> int:
        """The index of the (first) call that embedded ``text``; -1: none did."""
        return next((i for i, call in enumerate(self.calls) if text in call), -1)
