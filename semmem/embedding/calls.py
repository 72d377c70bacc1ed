"""What the model queue tells the encoder about the call it runs: its stop switch (the queue
stops a call nobody awaits any more: every request it was for answered or abandoned; an encoder
that can stop mid-call, ONNX Runtime's ``RunOptions.terminate`` checked between the graph's
nodes, registers how), and whether it is a part of a bulk job (a job of more texts than one
call takes: an encoder may run it on all cores, as it would the whole job in one call).

Both reach the encoder through the model thread (``running``), so the ``Embedder`` interface
stays one method: an encoder that never asks simply runs to the end, as it always did.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")

_current = threading.local()


class Stopped(Exception):
    """The model call was stopped: nobody awaits its vectors."""


class Interrupt:
    """One model call's stop switch (thread-safe)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._hooks: list[Callable[[], None]] = []
        self.stopped = False

    def stop(self) -> None:
        """Stop the call: every hook registered runs now, any registered later at once."""
        with self._lock:
            if self.stopped:
                return
            self.stopped = True
            hooks, self._hooks = self._hooks, []
        for hook in hooks:
            hook()

    def on_stop(self, hook: Callable[[], None]) -> None:
        """Run ``hook`` when the call is stopped (now, if it already is)."""
        with self._lock:
            if not self.stopped:
                self._hooks.append(hook)
                return
        hook()


def running(interrupt: Interrupt, call: Callable[[], T], *, bulk: bool = False) -> T:
    """``call()`` on this thread with ``interrupt`` as its stop switch (``current``), a part
    of a bulk job or not (``in_bulk``).

    Raises:
        Stopped: the call was stopped (whatever the encoder raised then).
    """
    _current.interrupt, _current.bulk = interrupt, bulk
    try:
        return call()
    except Exception:
        if interrupt.stopped:
            raise Stopped() from None
        raise
    finally:
        _current.interrupt, _current.bulk = None, False


def current() -> Interrupt | None:
    """The stop switch of the model call running on this thread, if any."""
    interrupt: Interrupt | None = getattr(_current, "interrupt", None)
    return interrupt


def in_bulk() -> bool:
    """Whether the model call running on this thread is a part of a bulk job."""
    bulk: bool = getattr(_current, "bulk", False)
    return bulk
