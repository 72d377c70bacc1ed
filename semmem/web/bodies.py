"""Request bodies within the contract's size limit: refused past 64 KiB while they stream in
(a declared ``Content-Length`` over the limit is refused before any of the body is read).
Responses are fitted to their limit as data, by ``semmem.protocol.fitting``."""

from __future__ import annotations

import asyncio

from starlette.requests import ClientDisconnect, Request

from semmem.contract import MAX_BODY
from semmem.errors import InvalidInput, TooLarge, TooSlow
from semmem.protocol.untrusted import ascii_int

BODY_TIMEOUT_S = 10.0  # the default of SEMMEM_BODY_TIMEOUT_S


async def read_body(request: Request, limit: int = MAX_BODY, *,
                    timeout: float = BODY_TIMEOUT_S) -> bytes:
    """The request body, read chunk by chunk and abandoned as soon as it passes ``limit``, or
    when it has not all arrived ``timeout`` seconds after the read began.

    Callers read it before taking a concurrency slot: a client that sends slowly holds its own
    socket, never a slot other callers need.

    Raises:
        TooLarge: the body (declared or received) is over ``limit`` bytes.
        TooSlow: the body took longer than ``timeout`` (408).
        InvalidInput: the client went away mid-body or sent a bad ``Content-Length``.
    """
    header = request.headers.get("content-length")
    if header is not None:
        declared = ascii_int(header)
        if declared is None:
            raise InvalidInput("Content-Length is not a number")
        if declared > limit:
            raise TooLarge(f"request body is {declared} bytes; the limit is {limit}",
                           {"limit": limit})
    body = bytearray()
    try:
        async with asyncio.timeout(timeout):
            async for chunk in request.stream():
                body += chunk
                if len(body) > limit:
                    raise TooLarge(f"request body is over the limit of {limit} bytes",
                                   {"limit": limit})
    except ClientDisconnect:
        raise InvalidInput("the client disconnected before sending the whole body") from None
    except TimeoutError:
        raise TooSlow(f"the request body did not arrive within {timeout:g} s",
                      {"timeoutSeconds": timeout}) from None
    return bytes(body)
