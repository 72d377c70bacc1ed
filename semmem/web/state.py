"""What one running app holds: the memory core once it is ready, auth, limits and metrics.

The model and the store are opened in the background so the process answers ``/healthz`` at
once and ``/readyz`` (and every provider call, with 503 ``unavailable``) until they are ready.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging

from semmem.embedder import Embedder
from semmem.errors import SemmemError, Unavailable
from semmem.maintenance import Maintainer
from semmem.memory import Memory
from semmem.settings import Settings
from semmem.web.auth import ProviderAuth, Tokens
from semmem.web.errors import NotReady
from semmem.web.limits import Limiter
from semmem.web.metrics import Metrics
from semmem.web.purging import Purger

log = logging.getLogger("semmem.web")


class Runtime:
    """The state of one app between lifespan start and stop."""

    def __init__(self, settings: Settings, *, embedder: Embedder | None = None,
                 memory: Memory | None = None) -> None:
        self.settings = settings
        self.auth = ProviderAuth(
            Tokens.configured(settings.tokens, settings.tokens_file),
            Tokens.configured(settings.admin_tokens, settings.admin_tokens_file),
            insecure=settings.insecure,
        )
        self.limiter = Limiter(settings.max_concurrency)
        self.metrics = Metrics()
        self.memory: Memory | None = None
        self.maintainer: Maintainer | None = None
        self.purger: Purger | None = None
        self.failure: SemmemError | None = None
        self._embedder = embedder
        self._given = memory
        self._owned = memory is None  # the store is closed at stop only if we opened it
        self._loading: asyncio.Task[None] | None = None
        self.ready = asyncio.Event()

    def start(self) -> None:
        """Begin opening the model and the store in the background."""
        self.ready = asyncio.Event()
        self._loading = asyncio.create_task(self._load(), name="semmem-load")

    async def _load(self) -> None:
        try:
            memory = self._given
            if memory is None:
                from semmem.runtime import load_embedder, open_memory

                embedder = self._embedder
                if embedder is None:
                    embedder = await asyncio.to_thread(load_embedder, self.settings)
                memory = await open_memory(self.settings, embedder)
            maintainer = Maintainer(memory.store, self.settings.maintenance_delay_s,
                                    self.settings.compact_every)
            purger = Purger(maintainer, memory.store.version_retention.total_seconds(),
                            self.settings.maintenance_delay_s)
            memory.on_write, memory.on_drop = purger.on_write, purger.on_drop
            maintainer.start()
            # Whatever a killed process had scheduled is lost: purge every partition once, and
            # again when the files its last writes may have left are old enough to delete.
            purger.sweep(await memory.store.partitions(),
                         memory.store.orphan_age.total_seconds())
            self.memory, self.maintainer, self.purger = memory, maintainer, purger
            log.info("ready: model %s, store %s", memory.embedder.model_id, memory.store.uri)
        except SemmemError as exc:
            self.failure = exc
            log.error("cannot start: %s", exc.message)
        except Exception as exc:  # any engine error: report it as unavailable, keep serving
            self.failure = Unavailable(f"cannot start: {type(exc).__name__}: {exc}")
            log.exception("cannot start")
        finally:
            self.ready.set()

    async def stop(self) -> None:
        """Stop maintenance and close what this app opened."""
        if self._loading is not None and not self._loading.done():
            self._loading.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._loading
        if self.purger is not None:
            self.purger.stop()
            if self.memory is not None:  # a memory passed in outlives this app: unhook it
                self.memory.on_write = self.memory.on_drop = None
        if self.maintainer is not None:
            await self.maintainer.stop()
        if self.memory is not None and self._owned:
            await self.memory.store.close()
        self.memory = self.maintainer = self.purger = None

    def require_memory(self) -> Memory:
        """The memory core.

        Raises:
            NotReady: still loading, or loading failed.
        """
        if self.memory is not None:
            return self.memory
        if self.failure is not None:
            # The failure itself (paths, store URI) is in the log; callers get the gist.
            raise NotReady("not ready: the model or the store failed to load; see the server log")
        raise NotReady("starting: the model and the store are still loading; retry shortly")
