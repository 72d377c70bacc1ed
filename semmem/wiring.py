"""Wiring: build the store, the embedder, the ranker and the memory core from settings."""

from __future__ import annotations

import functools
import json
import logging
from collections.abc import Callable
from datetime import timedelta
from typing import TYPE_CHECKING, Protocol

from semmem.embedding.choice import open_model
from semmem.embedding.embedder import CachedEmbedder, Embedder
from semmem.errors import SemmemError
from semmem.lifecycle.retention import Retention
from semmem.lifecycle.sweep import sweep
from semmem.lifecycle.upgrading import upgrade
from semmem.memory import Memory
from semmem.ranking.calibration import calibrated, load_calibration
from semmem.ranking.ranker import Ranker, RankingConfig
from semmem.scheduling.schedule import Maintenance
from semmem.settings import Settings

if TYPE_CHECKING:
    from semmem.store.tables import Store


class ModelIdentity(Protocol):
    """What a store needs of a model: its id and its vectors' width (an embedder has both;
    a backup or restore, which embeds nothing, passes them alone)."""

    @property
    def model_id(self) -> str: ...

    @property
    def dim(self) -> int: ...


def limit_blas_threads() -> None:
    """Let numpy's BLAS use one thread for the rest of the process.

    Recall's products are small, and OpenBLAS's worker threads keep spinning after each one,
    taking the cores the model's threads need next (docs/benchmarks.md has the figures).
    """
    from threadpoolctl import threadpool_limits  # type: ignore[import-untyped]

    threadpool_limits(limits=1, user_api="blas")


def load_embedder(settings: Settings) -> Embedder:
    """The configured model on the configured encoder, verified, with a query cache."""
    model = open_model(settings.model, settings.encoder, threads=settings.torch_threads)
    logging.getLogger("semmem").info("model %s on %s", model.model_id,
                                     getattr(model, "encoder", type(model).__name__))
    return CachedEmbedder(model, settings.query_cache)


def load_ranking(settings: Settings) -> RankingConfig:
    """The ranking file if one is configured, else ``SEMMEM_RANKING_*`` and defaults; the
    cosine thresholds left at their defaults carried over to the model's scale."""
    if settings.ranking is None:
        return calibrated(RankingConfig(), load_calibration(settings.model))
    # a file's knobs are all explicit (from_file passes every one): those it names stay
    named = json.loads(settings.ranking.read_text())
    return calibrated(RankingConfig.from_file(settings.ranking),
                      load_calibration(settings.model), explicit=set(named))


def similar_threshold(settings: Settings) -> float:
    """The write hints' threshold: as set, else the default on the model's scale."""
    if "similar_threshold" in settings.model_fields_set:
        return settings.similar_threshold
    return load_calibration(settings.model).similar_threshold(settings.similar_threshold)


def make_store(settings: Settings, embedder: ModelIdentity) -> Store:
    """A store for ``settings.data``, not yet opened (this loads the storage engine)."""
    from semmem.store.commit.fence import Fence
    from semmem.store.commit.quota import Quota
    from semmem.store.tables import Store

    return Store(
        settings.data,
        dim=embedder.dim,
        model_id=embedder.model_id,
        storage_options=settings.storage_options,
        read_consistency=timedelta(milliseconds=settings.read_consistency_ms),
        cache_size=settings.cache_size,
        version_retention=timedelta(seconds=settings.version_retention_s),
        orphan_age=timedelta(seconds=settings.orphan_age_s),
        index_threshold=settings.index_threshold,
        cache_items=settings.cache_items,
        cache_bytes=settings.cache_bytes,
        fence=Fence(skew=settings.max_clock_skew_s),
        quota=Quota(settings.partition_max_items, settings.partition_max_bytes),
    )


async def open_memory(
    settings: Settings, embedder: Embedder | None = None, *, check_model: bool = True,
    maintain: bool = False, on_changed: Callable[[SemmemError], None] | None = None,
) -> Memory:
    """Load the model (unless given), open the store and return the memory core; with
    ``maintain``, the core schedules maintenance and purges once started (a server);
    ``on_changed`` is told once when either store is changed store-wide under this process
    (``store/identity.py``: a server then stops)."""
    limit_blas_threads()
    embedder = embedder or load_embedder(settings)
    from semmem.store.apart import application_store

    store = make_store(settings, embedder)
    await store.open(check_model=check_model)
    beside = application_store(store)  # the application's store items (``store/apart.py``)
    await beside.open(check_model=check_model)
    store.on_changed = beside.on_changed = on_changed

    def observing(of: Store) -> Maintenance | None:
        return (Maintenance(of, settings.maintenance_delay_s, settings.compact_every,
                            record_ttl_s=settings.idempotency_ttl_s) if maintain else None)

    # its own retention: its items expire by their own TTL, never by the facts' max age
    application = Memory(beside, embedder, idempotency_ttl_ms=settings.idempotency_ttl_s * 1000,
                         observer=observing(beside), retention=Retention(beside), apart=True)
    observer = observing(store)
    memory = Memory(
        store, embedder, Ranker(load_ranking(settings)),
        idempotency_ttl_ms=settings.idempotency_ttl_s * 1000,
        index_candidates=settings.index_candidates, observer=observer,
        similar_threshold=similar_threshold(settings),
        retention=Retention(store, settings.retention_ms), application=application,
    )
    application.model = memory.model  # one model thread, one queue of callers
    await upgrade(memory)  # the format gate: this release's format before any door reads
    for core in (memory, application):
        if isinstance(core.observer, Maintenance):
            core.observer.sweeping(functools.partial(sweep, core), settings.retention_sweep_s)
            core.retention.found_expired = core.observer.sweep_soon
    return memory
