"""The partition's facts as MCP resources: ``semmem://items/<n>``, listed a page at a time.

Listing goes in number order (numbers are stable, so a page boundary does not shift when facts
are added); the list cursor is the number the next page starts after. A scoped token's
pages hold only the facts its scope covers (a page may then be short); the resources are the
model's (``semmem.audience``): an application's store item is neither listed nor read, its
number answered as one that does not exist.
"""

from __future__ import annotations

import mcp_types as types

from semmem.audience import Caller
from semmem.errors import InvalidInput, NotFound
from semmem.items import Item, one_line
from semmem.items.filters import Filter
from semmem.mcp import browsing
from semmem.memory import Memory
from semmem.protocol.untrusted import ascii_int

PAGE = 100
SCHEME = "semmem://items/"
TEMPLATE = types.ResourceTemplate(
    name="fact", uri_template=SCHEME + "{n}", mime_type="text/plain",
    description="One remembered fact by its number, as plain text.",
)


def _resource(item: Item) -> types.Resource:
    return types.Resource(
        uri=f"{SCHEME}{item.n}", name=f"fact {item.n}", title=one_line(item.text)[:80],
        mime_type="text/plain", size=len(item.text.encode("utf-8")),
        annotations=types.Annotations(last_modified=item.updated_at),
    )


async def list_page(memory: Memory, partition: str, cursor: str | None,
                    page: int = PAGE, *, scope: Filter | None = None
                    ) -> types.ListResourcesResult:
    """One page of the partition's facts, after the number in ``cursor``.

    Raises:
        InvalidInput: a cursor this server did not hand out.
    """
    after = 0
    if cursor is not None:
        number = ascii_int(cursor[1:]) if cursor.startswith("n") else None
        if number is None:
            raise InvalidInput("cursor is not one this server handed out")
        after = number
    chunk, following = await browsing.page(memory, partition, after, page,
                                             Caller.MODEL)
    return types.ListResourcesResult(
        resources=[_resource(it) for it in chunk if scope is None or scope.matches(it)],
        next_cursor=None if following is None else f"n{following}",
    )


async def read(memory: Memory, partition: str, uri: str,
               scope: Filter | None = None) -> types.ReadResourceResult:
    """The text of one fact.

    Raises:
        InvalidInput: not a ``semmem://items/<n>`` URI.
        NotFound: no live fact has that number.
    """
    n = ascii_int(uri.removeprefix(SCHEME)) if uri.startswith(SCHEME) else None
    if n is None:
        raise InvalidInput(f"resources are {SCHEME}<n>, n a fact's number")
    item = await browsing.item(memory, partition, n, Caller.MODEL)
    if item is None or (scope is not None and not scope.matches(item)):
        raise NotFound(f"item {n} does not exist in this memory", {"n": n})
    return types.ReadResourceResult(contents=[
        types.TextResourceContents(uri=uri, mime_type="text/plain", text=item.text),
    ])
