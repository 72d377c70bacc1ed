"""Request heads bounded in size and time: uvicorn's h11 protocol, with every request head
(request line and headers) over ``MAX_HEAD`` refused (413 ``too_large``: the contract's
status for its code, where HTTP alone would say 431) and a head still arriving after
``SEMMEM_HEAD_TIMEOUT_S`` refused (408 ``request_timeout``), both in the contract's envelope.

h11 bounds only a head still *incomplete* in its buffer: one that arrives whole in a single
read is parsed at any size. uvicorn times out only the wait between requests (keep-alive),
never a head arriving byte by byte, so one trickling client held its socket for as long as
it cared to.
"""

from __future__ import annotations

import asyncio
from typing import Any

import h11
from uvicorn.protocols.http.h11_impl import STATUS_PHRASES, H11Protocol

from semmem.errors import InvalidInput, SemmemError, TooLarge, TooSlow
from semmem.web.errors import error_response

MAX_HEAD = 16 * 1024  # bytes of one request head, as h11 bounds an incomplete one


def head_size(event: h11.Request) -> int:
    """The bytes of a parsed request head: request line, header lines, the blank line."""
    line = len(event.method) + len(event.target) + len(b"  HTTP/1.1\r\n")
    return line + sum(len(name) + len(value) + 4 for name, value in event.headers) + 2


class _Head(h11.Connection):
    """h11's server side, refusing a complete head over ``MAX_HEAD`` as it refuses an
    incomplete one, and keeping the status it refused with."""

    def __init__(self) -> None:
        super().__init__(h11.SERVER, max_incomplete_event_size=MAX_HEAD)
        self.refusal: SemmemError = InvalidInput("invalid HTTP request")

    def next_event(self) -> Any:
        """The next event; a head over the bound raises as a malformed one does."""
        try:
            event = super().next_event()
        except h11.RemoteProtocolError as exc:
            if exc.error_status_hint == 431:
                self.refusal = _too_large()
            raise
        if isinstance(event, h11.Request) and head_size(event) > MAX_HEAD:
            self.refusal = _too_large()
            raise h11.RemoteProtocolError("request head too large", error_status_hint=431)
        return event


def _too_large() -> TooLarge:
    return TooLarge(f"the request head (request line and headers) is over {MAX_HEAD} bytes",
                        {"limit": MAX_HEAD})


class BoundedHeads(H11Protocol):
    """uvicorn's h11 protocol with heads bounded in size and time (``protocol`` sets the time)."""

    head_timeout_s = 10.0

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.conn = _Head()
        self._head_timer: asyncio.TimerHandle | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        """A new connection: its first head is due within the deadline."""
        super().connection_made(transport)  # type: ignore[arg-type]
        self._watch_head()

    def data_received(self, data: bytes) -> None:
        """Bytes in; a head still arriving keeps (or starts) its deadline."""
        super().data_received(data)
        self._watch_head()

    def connection_lost(self, exc: Exception | None) -> None:
        """Gone: no deadline to keep."""
        self._cancel_head_timer()
        super().connection_lost(exc)

    def _watch_head(self) -> None:
        # Waiting for a head (their side idle) runs the deadline from the first byte (or the
        # opening); a head parsed stops it. Between requests uvicorn's keep-alive applies.
        if self.conn.their_state is h11.IDLE and not self.transport.is_closing():
            if self._head_timer is None:
                self._head_timer = self.loop.call_later(self.head_timeout_s, self._head_late)
        else:
            self._cancel_head_timer()

    def _cancel_head_timer(self) -> None:
        if self._head_timer is not None:
            self._head_timer.cancel()
            self._head_timer = None

    def _head_late(self) -> None:
        self._head_timer = None
        if self.conn.their_state is h11.IDLE and not self.transport.is_closing():
            self._refuse(TooSlow(f"the request head did not arrive within "
                                 f"{self.head_timeout_s:g} s", {"limit_s": self.head_timeout_s}))

    def send_400_response(self, msg: str) -> None:
        """A head h11 refused (malformed, or over the bound): the contract's envelope."""
        self._refuse(self.conn.refusal if isinstance(self.conn, _Head)
                     else InvalidInput("invalid HTTP request"))

    def _refuse(self, exc: SemmemError) -> None:
        """Answer ``exc`` in the contract's envelope and close the connection."""
        response = error_response(exc)
        headers = [*response.raw_headers, (b"connection", b"close")]
        try:
            out = self.conn.send(h11.Response(status_code=response.status_code,
                                              headers=headers,
                                              reason=STATUS_PHRASES[response.status_code]))
            body = self.conn.send(h11.Data(data=bytes(response.body)))
            end = self.conn.send(h11.EndOfMessage())
            self.transport.write(b"".join(part or b"" for part in (out, body, end)))
        except h11.LocalProtocolError:
            pass  # a response was already under way: closing is all that is left
        self.transport.close()


def protocol(head_timeout_s: float) -> type[BoundedHeads]:
    """The protocol class for uvicorn's ``http``, with this head deadline."""
    return type("BoundedHeads", (BoundedHeads,), {"head_timeout_s": head_timeout_s})
