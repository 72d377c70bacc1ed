"""The two cores of a memory (``Apart``, this part of ``Memory``): the model's, over the
store's facts and conversation pieces, and the application's, over the application's store
(``semmem.store.apart``: its own tables, numbers, indexes, statistics, quota and retention)
holding its store items (``semmem.stored``). The application's core is a ``Memory`` of its
own (``apart``), given by the process that opens both (``semmem.wiring``), else opened on
first use beside the model's store. The owner's doors (``lifecycle/owners.py``) cover both;
the model's reads never open the application's."""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from typing import Self

    from semmem.store.tables import Store


class Apart:
    """The application's core of ``Memory``: ``application()``, and ``cores()`` for the
    owner's doors."""

    store: Store
    model: Any  # the model thread (``embedding.queue.ModelQueue``)
    apart: bool  # this core is the application's
    _application: Any  # the application's core once opened (a ``Memory``)
    _opening: asyncio.Lock

    def _beside(self, store: Store) -> Self:
        """A core of this one's kind over ``store``, the application's (``Memory`` makes it)."""
        raise NotImplementedError

    async def application(self) -> Self:
        """The core of the application's store items: this one when it is the application's,
        else the one given, else opened now beside this store (``store.apart``)."""
        if self.apart:
            return self
        if self._application is None:
            async with self._opening:
                if self._application is None:
                    from semmem.store.apart import application_store

                    store = application_store(self.store)
                    # its model is checked with the model's store (``reindex`` opens both
                    # with another model: it re-embeds both)
                    await store.open(check_model=False)
                    core = self._beside(store)
                    core.model = self.model  # one model thread, one queue of callers
                    self._application = core
        app: Self = self._application
        return app

    async def cores(self) -> list[Self]:
        """The cores an owner's door covers: this one, and the application's when this is
        the model's."""
        return [self] if self.apart else [self, await self.application()]

    async def close_application(self) -> None:
        """Close the application's core, if it is open."""
        if not self.apart and self._application is not None:
            await self._application.close()
