"""What a table handle is asked once: its URI.

A LanceDB handle's ``uri()`` is a round trip into the engine's runtime (its answer comes back
through the event loop: a turn of the loop and the interpreter lock handed between threads),
and a write asked it twice, once for its view and once for its commit. A handle's URI never
changes, so it is kept with the handle (weakly: a handle dropped from the connection's cache
takes it along).
"""

from __future__ import annotations

import weakref
from typing import Any

_URIS: weakref.WeakKeyDictionary[Any, str] = weakref.WeakKeyDictionary()


async def table_uri(tbl: Any) -> str:
    """The URI of the table ``tbl`` is a handle of (asked of the engine once per handle)."""
    uri = _URIS.get(tbl)
    if uri is None:
        uri = _URIS[tbl] = str(await tbl.uri())
    return uri
