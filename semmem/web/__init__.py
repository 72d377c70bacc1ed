"""The HTTP surface of semmem: the provider contract, ops endpoints and the admin API.

This package is the only one that imports FastAPI/Starlette. ``create_app`` and ``serve`` are
imported lazily so that ``semmem declare`` renders the declaration without loading the core.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from semmem.protocol.declaration import render_declaration
    from semmem.web.app import create_app
    from semmem.web.server import serve

__all__ = ["create_app", "render_declaration", "serve"]


def __getattr__(name: str) -> Any:
    if name == "create_app":
        from semmem.web.app import create_app

        return create_app
    if name == "serve":
        from semmem.web.server import serve

        return serve
    if name == "render_declaration":
        from semmem.protocol.declaration import render_declaration

        return render_declaration
    raise AttributeError(name)
