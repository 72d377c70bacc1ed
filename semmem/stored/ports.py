"""What store items need of the memory core: keyed items' collaborators
(``semmem.keyed.ports.Partitions``), the model to embed index texts and queries, and the
store's listing records (which partitions hold store items: ``semmem.store.system``).
``Memory`` is one (``semmem.writes``)."""

from __future__ import annotations

from typing import Any, Protocol

import numpy as np

from semmem.keyed.ports import Partitions


class Model(Protocol):
    """The model thread."""

    async def embed(self, texts: list[str], *, query: bool = False) -> np.ndarray:
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
