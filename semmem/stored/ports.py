"""What store items need of the memory core: keyed items' collaborators
(``semmem.keyed.ports.Partitions``), the model to embed index texts and queries, and the
store's listing records (which partitions hold store items: ``semmem.store.system``); and
what the format gate's steps of store items (``semmem.stored.upgrade``) need besides: every
partition, every row of one, a listing record derived again, a partition deleted.
``Memory`` is both (``semmem.writes``)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Protocol

import numpy as np

from semmem.keyed.ports import Partitions

if TYPE_CHECKING:
    from semmem.items import Item


class Model(Protocol):
    """The model thread."""

    async def embed(self, texts: list[str], *, query: bool = False,
                    caller: str = "") -> np.ndarray:
        """Vectors of ``texts``, one row each (``query``: as searched with)."""
        ...


class Core(Partitions, Protocol):
    """Keyed items' collaborators, the model, the listing records."""

    @property
    def model(self) -> Model:
        """The model thread."""
        ...

    async def listings(self) -> dict[str, dict[str, Any]]:
        """Every listing record (``{"partition", "until"}``), by table."""
        ...

    async def application(self) -> Core:
        """The application's core: its store items' own store (itself when it is that one)."""
        ...


class Holdings(Core, Protocol):
    """What an upgrade step reads and changes across the store, through the core's doors."""

    async def partitions(self) -> list[str]:
        """Names of every partition, sorted."""
        ...

    async def every_item(self, partition: str) -> Sequence[Item]:
        """Every row of ``partition`` that is not forgotten, the expired still in."""
        ...

    async def every_row(self, partition: str) -> tuple[Sequence[Item], np.ndarray]:
        """``every_item`` and their vectors (row ``i`` is item ``i``'s)."""
        ...

    async def relist(self, partition: str) -> bool:
        """Derive ``partition``'s listing record from its data again (and write it);
        whether it was not as derived."""
        ...

    async def delete_partition(self, partition: str) -> bool:
        """Delete ``partition`` through the delete path (from every file within the forget
        window); whether it existed."""
        ...


class Apart(Holdings, Protocol):
    """An upgrade's doors of the model's core, and the application's core beside it
    (``semmem.lifecycle.apart``)."""

    async def application(self) -> Holdings:
        """The application's core (its store items' own store)."""
        ...
