"""A fake model a test can hold: each call recorded, in the order the model thread ran it, and
held while the test keeps it closed (to line work up behind it); a held call stops as ONNX
Runtime's does when the queue stops it (``embedding.calls``)."""

from __future__ import annotations

import threading

from semmem.embedding.calls import current
from semmem.embedding.fakes import HashingEmbedder
from semmem.items import Vectors


class HeldEmbedder:
    """The fake embedder; each call's texts recorded in order, and held while ``open`` is
    clear (``entered`` says a call is in); a held call stopped raises, its texts recorded in
    ``stopped`` (``stops`` says one was)."""

    def __init__(self) -> None:
        self.inner = HashingEmbedder()
        self.model_id = self.inner.model_id
        self.dim = self.inner.dim
        self.calls: list[list[str]] = []
        self.stopped: list[list[str]] = []
        self.open = threading.Event()
        self.open.set()
        self.entered = threading.Event()
        self.stops = threading.Event()

    def embed_batch(self, texts: list[str]) -> Vectors:
        """Record the call, wait while held (or until stopped), then embed."""
        self.calls.append(list(texts))
        stop = threading.Event()
        interrupt = current()
        if interrupt is not None:
            interrupt.on_stop(stop.set)
        self.entered.set()
        for _ in range(6000):  # the model's own wait: until stopped or opened, 60 s at most
            opened = self.open.wait(0.01)
            if stop.is_set():  # stopped before it was let go: it stops
                self.stopped.append(list(texts))
                self.stops.set()
                raise RuntimeError("terminated")
            if opened:
                return self.inner.embed_batch(texts)
        raise TimeoutError("the test never let the model go")

    def hold(self) -> None:
        """Hold the next calls (and forget that one came in)."""
        self.open.clear()
        self.entered.clear()

    def call_of(self, text: str) -> int:
        """The index of the (first) call that embedded ``text``; -1: none did."""
        return next((i for i, call in enumerate(self.calls) if text in call), -1)
