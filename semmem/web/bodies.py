"""Request and response bodies within the contract's size limits.

Request bodies are refused past 64 KiB while they stream in (a declared ``Content-Length``
over the limit is refused before any of the body is read); responses are cut to fit 64 KiB.
"""

from __future__ import annotations

from typing import Any

from starlette.requests import ClientDisconnect, Request

from semmem.contract import MAX_BODY, MAX_ID_BYTES, MAX_RESPONSE, MAX_SOURCES
from semmem.errors import InvalidInput, SemmemError, TooLarge
from semmem.web.jsonio import dumps


async def read_body(request: Request, limit: int = MAX_BODY) -> bytes:
    """The request body, read chunk by chunk and abandoned as soon as it passes ``limit``.

    Raises:
        TooLarge: the body (declared or received) is over ``limit`` bytes.
        InvalidInput: the client went away mid-body or sent a bad ``Content-Length``.
    """
    declared = request.headers.get("content-length")
    if declared is not None:
        if not declared.strip().isdigit():
            raise InvalidInput("Content-Length is not a number")
        if int(declared) > limit:
            raise TooLarge(f"request body is {int(declared)} bytes; the limit is {limit}",
                           {"limit": limit})
    body = bytearray()
    try:
        async for chunk in request.stream():
            body += chunk
            if len(body) > limit:
                raise TooLarge(f"request body is over the limit of {limit} bytes",
                               {"limit": limit})
    except ClientDisconnect:
        raise InvalidInput("the client disconnected before sending the whole body") from None
    return bytes(body)


def fit_recall(wire: dict[str, Any], limit: int = MAX_RESPONSE) -> bytes:
    """The recall response body, dropping the least relevant lines if it would pass ``limit``.

    Only pathological texts (heavy JSON escaping) get here: a ``maxBytes`` of text normally
    serialises far below 64 KiB. Each line of ``text`` belongs to the source at its index.
    """
    text: str = wire["text"]
    sources: list[dict[str, str]] = list(wire["sources"])
    lines = text.split("\n") if text else []
    if len(lines) != len(sources):
        raise SemmemError("recall text and sources disagree")
    if any(len(s["id"].encode("utf-8")) > MAX_ID_BYTES for s in sources):
        raise SemmemError("a source id is over 1,024 bytes")
    if len(str(wire.get("cursor", "")).encode("utf-8")) > MAX_ID_BYTES:
        raise SemmemError("the cursor is over 1,024 bytes")
    keep = min(len(sources), MAX_SOURCES)
    while True:
        body = dumps({**wire, "text": "\n".join(lines[:keep]), "sources": sources[:keep]})
        if len(body) <= limit or keep == 0:
            return body
        keep -= 1


def fit_search(result: dict[str, Any], limit: int = MAX_RESPONSE) -> bytes:
    """The ``{"result": …}`` body of a search, keeping the best items that fit in ``limit``.

    When items are cut, ``"truncated": true`` tells the model there were more.
    """
    items: list[dict[str, Any]] = list(result["items"])
    body = dumps({"result": result}, sort_keys=True)
    if len(body) <= limit:
        return body
    cut = {**result, "items": [], "truncated": True}
    size = len(dumps({"result": cut}, sort_keys=True))
    kept: list[dict[str, Any]] = []
    for item in items:
        cost = len(dumps(item, sort_keys=True)) + (1 if kept else 0)
        if size + cost > limit:
            break
        kept.append(item)
        size += cost
    return dumps({"result": {**cut, "items": kept}}, sort_keys=True)
