"""The application's store beside the model's: the store at ``<uri>/application`` (its own
registry, tables, listing records, indexes, quota and purges), made with the options of the
model's store (``Store.options``). The model's store holds facts and conversation pieces; the
application's holds the application's store items (``semmem.stored``), keyed by namespace and
key, numbered by their own sequence. Nothing of one is read to answer the other."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from semmem.store.tables import Store

APPLICATION = "application"  # the folder (or key prefix) of the application's store
# Open tables (and cached views) the application's store keeps at least: a prefix search reads
# every namespace under the prefix (one table each), and a table opened again costs ~2 ms
# where an open one's version check costs ~0.1 ms (1,000 namespaces: 2 s against 80 ms,
# docs/benchmarks.md); ~30 MB per 1,000 open tables.
TABLES = 2048


def application_uri(uri: str) -> str:
    """Where the application's store of the model's store at ``uri`` lives."""
    base, _, query = uri.partition("?")
    return f"{base.rstrip('/')}/{APPLICATION}" + (f"?{query}" if query else "")


def application_store(store: Store) -> Store:
    """The application's store beside ``store`` (not yet opened)."""
    from semmem.store.tables import Store

    options = {**store.options, "cache_size": max(store.options["cache_size"], TABLES)}
    return Store(application_uri(store.uri), **options)
