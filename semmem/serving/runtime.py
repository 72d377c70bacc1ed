"""What one running app holds: the memory core once it is ready, auth, limits and metrics.

The model and the store are opened in the background so the process answers ``/healthz`` at
once and ``/readyz`` (and every provider call, with 503 ``unavailable``) until they are ready.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import logging
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Any

from semmem.embedding.embedder import Embedder
from semmem.errors import NotReady, Overloaded, RateLimited, SemmemError, Unavailable
from semmem.items.filters import Filter
from semmem.memory import Memory
from semmem.protocol.tools import tools_for
from semmem.scheduling.schedule import Maintenance
from semmem.serving.auth import ProviderAuth, Tokens, bearer_of
from semmem.serving.dispatch import Dispatcher
from semmem.serving.metrics import Metrics
from semmem.serving.ranked import ranking_line, ranking_status
from semmem.serving.rates import RateLimiter
from semmem.settings import Settings
from semmem.store.modes import local_path

log = logging.getLogger("semmem.web")
MAX_RETRY_S = 30.0  # the longest wait between two tries of a remote store that does not answer


def transient(exc: SemmemError, data: str) -> bool:
    """Whether a start-up failure may pass by itself, so the server waits and tries again:
    a remote store (S3 and the like) that does not answer. Everything else — the model's files,
    a store embedded with another model, a local store that cannot be opened, a bad tokens or
    ranking file — needs the operator, so the server stops (docs/operating.md, "Start-up")."""
    return type(exc) is Unavailable and local_path(data) is None


class Limiter:
    """At most ``limit`` requests in progress; one more is refused at once (429), not queued.

    Refusing rather than queueing keeps latency bounded and lets the host's retry (after
    ``Retry-After``) land on a less busy moment, within its deadline.
    """

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.active = 0

    @asynccontextmanager
    async def slot(self) -> AsyncIterator[None]:
        """Hold one slot for the duration of a request.

        Raises:
            Overloaded: all slots are taken.
        """
        if self.active >= self.limit:
            raise Overloaded(f"too many requests in progress (limit {self.limit}); retry shortly",
                             {"limit": self.limit})
        self.active += 1
        try:
            yield
        finally:
            self.active -= 1


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
        self.rates = RateLimiter.configured(settings.rate_limit, settings.rate_burst)
        self.metrics = Metrics()
        # The contract's tools, as the provider endpoint serves them (listed by name).
        served = {s.name: s for s in tools_for(accepted=self.accepted,
                                               expiry=settings.tool_expiry,
                                               metadata=settings.tool_metadata)}
        self.tools = Dispatcher({name: served[name] for name in sorted(served)},
                                self.metrics, accepted=self.accepted)
        self.memory: Memory | None = None
        self.failure: SemmemError | None = None
        # the ranking file and what it changed from the defaults (/readyz, serving/ranked.py)
        self.ranking: dict[str, Any] | None = None
        self._embedder = embedder
        self._given = memory
        self._owned = memory is None  # the store is closed at stop only if we opened it
        self._loading: asyncio.Task[None] | None = None
        self.ready = asyncio.Event()
        # Called once when loading failed in a way no retry fixes (``semmem serve`` stops).
        self.on_fatal: Callable[[SemmemError], None] | None = None
        # Called once when the model and the store are open (``semmem serve``: the token file).
        self.on_ready: Callable[[], None] | None = None

    @property
    def accepted(self) -> bool:
        """Whether writes answer ``accepted``: another replica may read a stale version for
        up to the read-consistency interval."""
        return self.settings.read_consistency_ms > 0

    def start(self) -> None:
        """Begin opening the model and the store in the background."""
        self.ready = asyncio.Event()
        self._loading = asyncio.create_task(self._load(), name="semmem-load")

    async def _load(self) -> None:
        try:
            memory = self._given or await self._open()
            self.ranking = ranking_status(self.settings, memory.ranker.config)
            if self.on_ready is not None:
                self.on_ready()
            self.memory = memory
            log.info("ready: model %s, store %s", memory.embedder.model_id, memory.uri)
            log.info("%s", ranking_line(self.ranking))
        except SemmemError as exc:
            self._fail(exc)
        except Exception as exc:  # any engine error: report it as unavailable
            log.exception("cannot start")
            self._fail(Unavailable(f"cannot start: {type(exc).__name__}: {exc}"))
        finally:
            self.ready.set()

    async def _open(self) -> Memory:
        """The model loaded once, then the store opened: again, with backoff, while it is a
        remote store that does not answer (``transient``); any other failure is raised."""
        from semmem.wiring import load_embedder, open_memory

        embedder = self._embedder
        if embedder is None:
            embedder = await asyncio.to_thread(load_embedder, self.settings)
        for attempt in itertools.count(1):
            try:
                memory = await open_memory(self.settings, embedder, maintain=True,
                                           on_changed=self._changed)
            except Unavailable as exc:
                if not transient(exc, self.settings.data):
                    raise
                wait = min(2.0 ** (attempt - 1), MAX_RETRY_S)
                log.warning("store not reachable (try %d), trying again in %.0f s: %s",
                            attempt, wait, exc.message)
                await asyncio.sleep(wait)
                continue
            await memory.start()
            return memory
        raise AssertionError("unreachable")  # pragma: no cover

    def _fail(self, exc: SemmemError) -> None:
        """Loading failed for good: remembered (``/readyz`` says so), logged, and handed to
        ``on_fatal`` (``semmem serve`` then ends the process with the message)."""
        self.failure = exc
        log.error("cannot start: %s", exc.message)  # a log collector's copy (JSON logs too)
        if self.on_fatal is not None:
            self.on_fatal(exc)

    def _changed(self, exc: SemmemError) -> None:
        """The store changed store-wide under this server (``store/identity.py``): it can
        serve no more, so it stops as a failed load does (``on_fatal``)."""
        if self.on_fatal is not None:
            self.on_fatal(exc)

    @property
    def maintainer(self) -> Maintenance | None:
        """The running memory's maintenance, if it has one."""
        observer = self.memory.observer if self.memory is not None else None
        return observer if isinstance(observer, Maintenance) else None

    async def stop(self) -> None:
        """Stop maintenance and close what this app opened."""
        if self._loading is not None and not self._loading.done():
            self._loading.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._loading
        if self.memory is not None and self._owned:
            await self.memory.close()
        self.memory = None

    def admit(self, header: str | None) -> Filter | None:
        """Allow a provider call: its credentials, then its token's rate limit; the token's
        scope, read with it (``ProviderAuth.check``).

        Raises:
            Unauthorized: missing or wrong token.
            RateLimited: the token is over ``SEMMEM_RATE_LIMIT``.
        """
        scope = self.auth.check(header)
        self.limit(header, "provider")
        return scope

    def limit(self, header: str | None, surface: str) -> None:
        """Spend one request of the (already checked) token's rate limit.

        Raises:
            RateLimited: the token is over ``SEMMEM_RATE_LIMIT`` (counted in the metrics).
        """
        # Insecure checks no token: a made-up one must not get a bucket of its own.
        token = None if self.auth.insecure else bearer_of(header)
        try:
            self.rates.take(token)
        except RateLimited:
            self.metrics.rate_limited.labels(surface).inc()
            raise

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
