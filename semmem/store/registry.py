"""The registry table ``_semmem``: the store's metadata and the partition name of every table
(table names are hashes, so the names themselves live only here)."""

from __future__ import annotations

import asyncio
import functools
import json
import secrets
from collections.abc import Awaitable, Callable
from datetime import timedelta
from typing import Any

import lancedb
import pyarrow as pa

from semmem.items import now_ms
from semmem.store.commit.conflicts import backoff, is_commit_conflict
from semmem.store.commit.create import create_table
from semmem.store.upkeep.compaction import Upkeep

REGISTRY_TABLE = "_semmem"
REGISTRY_SCHEMA = pa.schema(
    [pa.field("key", pa.string(), nullable=False), pa.field("value", pa.string())]
)
# One commit (and one small fragment) per partition created: compact now and then, or every
# later registry read and write would scan thousands of fragments.
COMPACT_EVERY = 64
META = "meta"
SECRET = "secret"
APPLIED = "d:retention"  # the deployment default the last full sweep applied
# A deleted table's entry (``g:<table>``: when), kept this long: what tells the other processes
# to drop what they hold of it, and the registry pass to purge it.
GONE_KEEP_MS = 3_600_000
MAX_ATTEMPTS = 10
# A partition's system records (``<kind>:<table>``), which go with its name: the name itself,
# its retention override, its listing (``store/system.py``).
LISTED = "s"
PER_TABLE = ("t", "r", LISTED)


class Registry:
    """Partition names and store metadata, in one small table of ``key → JSON`` rows."""

    def __init__(self, db: lancedb.AsyncConnection, upkeep: Upkeep) -> None:
        self.db = db
        self.upkeep = upkeep
        self._asked: tuple[int, dict[str, int]] | None = None  # the last read, by version
        self._followed: Any = None  # the handle the purge requests are read through
        # Retention overrides and the default last applied, by version.
        self._policies: tuple[int, dict[str, int | None], tuple[bool, int | None]] | None = None
        self.gone: dict[str, int] = {}  # deleted tables and when, as of the last policies read
        self.seen_meta: dict[str, Any] | None = None  # the metadata, as of that read
        # New tables' entries waiting for the append in flight (``add_table``).
        self._adding: list[tuple[dict[str, str], asyncio.Future[None]]] = []
        self._appender: asyncio.Future[None] | None = None
        self._listed: tuple[int, dict[str, dict[str, Any]]] | None = None  # by version

    async def _table(self, create: bool) -> Any:
        try:
            return await self.db.open_table(REGISTRY_TABLE)
        except ValueError:
            if not create:
                return None
        # Made with the store's secret in it: of processes creating it at once one wins
        # (``store/commit/create.py``), so all of them read the same secret (inserted
        # afterwards, each would keep its own).
        await create_table(self.upkeep, self.db.uri, REGISTRY_TABLE, _secret_row(),
                           REGISTRY_SCHEMA, file_format=None)
        return await self.db.open_table(REGISTRY_TABLE)

    async def rows(self) -> dict[str, dict[str, Any]]:
        """Every entry, decoded."""
        reg = await self._table(create=False)
        if reg is None:
            return {}
        out: dict[str, dict[str, Any]] = {}
        for r in (await reg.to_arrow()).to_pylist():
            key, value = str(r["key"]), json.loads(r["value"])
            held = out.get(key)
            # A table's entry may be there twice (``add_table``): the earliest creation stands.
            if held is None or not key.startswith("t:") \
                    or value.get("created", 0) < held.get("created", 0):
                out[key] = value
        return out

    async def put(self, key: str, value: dict[str, Any] | str) -> None:
        """Insert or replace one entry (again after losing a race to another process)."""
        data = pa.table({"key": [key], "value": [json.dumps(value)]}, schema=REGISTRY_SCHEMA)

        async def upsert(reg: Any) -> None:
            await (reg.merge_insert("key").when_matched_update_all()
                   .when_not_matched_insert_all()).execute(data)

        await self._commit(upsert)

    async def _commit(self, write: Callable[[Any], Awaitable[None]]) -> None:
        """``write`` to the registry, again after losing a race to another process; the table
        is compacted now and then."""
        for attempt in range(MAX_ATTEMPTS):
            try:
                reg = await self._table(create=True)
                await write(reg)
                break
            except Exception as exc:  # the engine's errors are not a typed tree
                if attempt == MAX_ATTEMPTS - 1 or not is_commit_conflict(exc):
                    raise
                await backoff(attempt)
        if await reg.version() % COMPACT_EVERY == 0:
            await asyncio.to_thread(self.upkeep.maintain_small, await reg.uri())
            await reg.checkout_latest()

    async def secret(self) -> bytes:
        """The store's secret (made on first use; the first writer's wins): it keys the
        fingerprints of idempotency records, so a guessed text cannot be confirmed from the
        partition tables alone. Kept here, out of them."""
        for attempt in range(MAX_ATTEMPTS):
            found = (await self.rows()).get(SECRET)
            if found is not None:
                return bytes.fromhex(str(found))
            try:  # a new registry is created with one; a registry made by older code gets one
                reg = await self._table(create=True)
                if (await self.rows()).get(SECRET) is None:
                    await reg.merge_insert("key").when_not_matched_insert_all().execute(
                        _secret_row())
            except Exception as exc:  # the engine's errors are not a typed tree
                if attempt == MAX_ATTEMPTS - 1 or not is_commit_conflict(exc):
                    raise
                await backoff(attempt)
        raise OSError("the store's secret could not be read back")

    async def set_secret(self, secret: bytes) -> None:
        """Replace the store's secret (a restore into a new store keeps its source's: its
        ledgers and digests are keyed by it)."""
        await self.put(SECRET, secret.hex())

    async def request_purge(self, *names: str) -> None:
        """Ask the servers of this store to purge tables ``names`` (a text was dropped by a
        process that runs no maintenance of its own: the CLI, a library user; or by a server
        stopping before its purge was done), in one commit."""
        at = json.dumps({"at": now_ms()})
        data = pa.table({"key": [f"u:{name}" for name in names], "value": [at] * len(names)},
                        schema=REGISTRY_SCHEMA)

        async def upsert(reg: Any) -> None:
            await (reg.merge_insert("key").when_matched_update_all()
                   .when_not_matched_insert_all()).execute(data)

        if names:
            await self._commit(upsert)

    async def purge_requests(self) -> tuple[int, dict[str, int]]:
        """The registry's version, and the tables whose purge was asked for with when; read
        again only once the version moved (else one listing)."""
        reg = self._followed or await self._table(create=False)
        if reg is None:
            return 0, {}
        self._followed = reg
        await reg.checkout_latest()
        version = int(await reg.version())
        if self._asked is not None and self._asked[0] == version:
            return self._asked
        rows = (await reg.query().where("key LIKE 'u:%'").to_arrow()).to_pylist()
        asked = {str(r["key"])[2:]: int(json.loads(r["value"])["at"]) for r in rows}
        self._asked = (version, asked)
        return self._asked

    async def retention(self) -> dict[str, int | None]:
        """Each table's retention override: a max age in milliseconds, or ``None`` for keep
        forever (a table without one inherits the deployment's default). Read again only once
        the registry's version moved."""
        return (await self.policies())[0]

    async def set_applied_default(self, max_age_ms: int | None) -> None:
        """Record ``max_age_ms`` as the deployment default the store's facts were swept under."""
        await self.put(APPLIED, {"maxAgeMs": max_age_ms})

    async def policies(self) -> tuple[dict[str, int | None], tuple[bool, int | None]]:
        """The overrides, and whether a deployment default was recorded as applied by a sweep
        with its max age in ms (``None``: forever): one read, which reads the store's metadata
        too (``seen_meta``: its identity record, ``store/identity.py``)."""
        reg = self._followed or await self._table(create=False)
        if reg is None:
            return {}, (False, None)
        self._followed = reg
        await reg.checkout_latest()
        version = int(await reg.version())
        if self._policies is not None and self._policies[0] == version:
            return self._policies[1], self._policies[2]
        rows = (await reg.query().where(f"key LIKE 'r:%' OR key = '{APPLIED}' OR key LIKE 'g:%' "
                                        f"OR key = '{META}'").to_arrow()).to_pylist()
        found = {str(r["key"])[2:]: json.loads(r["value"])["maxAgeMs"] for r in rows
                 if str(r["key"]).startswith("r:")}
        self.gone = {str(r["key"])[2:]: int(json.loads(r["value"])["at"]) for r in rows
                     if str(r["key"]).startswith("g:")}
        self.seen_meta = next((json.loads(r["value"]) for r in rows if r["key"] == META),
                              None)
        applied = next(((True, json.loads(r["value"])["maxAgeMs"]) for r in rows
                        if r["key"] == APPLIED), (False, None))
        self._policies = (version, found, applied)
        return found, applied

    async def set_retention(self, name: str, max_age_ms: int | None, inherit: bool) -> None:
        """Set table ``name``'s retention override (``None``: forever), or remove it."""
        if inherit:
            reg = await self._table(create=False)
            if reg is not None:
                await reg.delete(f"key = 'r:{name}'")  # name is hex: safe in a filter
            return
        await self.put(f"r:{name}", {"maxAgeMs": max_age_ms})

    async def meta(self) -> dict[str, Any] | None:
        """The store's metadata (schema version, model), or ``None`` for a new store."""
        return (await self.rows()).get(META)

    async def set_meta(self, value: dict[str, Any]) -> None:
        """Replace the store's metadata."""
        await self.put(META, value)

    async def add_table(self, name: str, partition: str, created: int | None = None) -> None:
        """Record the partition a new table belongs to, and when it was created (now, or
        the original's time for a restored one).

        The entries of tables created at the same time go in one append (a group commit): one
        commit per new partition on this one table made the first writes of many new
        partitions queue for seconds on object storage. An append, not an upsert: appends of
        several processes never conflict; two processes creating the same table both append
        its entry, and ``rows`` reads the earliest."""
        row = {"key": f"t:{name}", "value": json.dumps(
            {"partition": partition, "created": now_ms() if created is None else created})}
        loop = asyncio.get_running_loop()
        if self._appender is not None and self._appender.get_loop() is not loop:
            # Left by an event loop that ended mid-append (its waiters went with it).
            self._appender, self._adding = None, []
        done = loop.create_future()
        self._adding.append((row, done))
        if self._appender is None or self._appender.done():
            self._appender = asyncio.ensure_future(self._append_added())
        await done

    async def _append_added(self) -> None:
        await asyncio.sleep(0)  # the other creations of this turn join the first
        while self._adding:
            group, self._adding = self._adding, []
            data = pa.Table.from_pylist([row for row, _ in group], schema=REGISTRY_SCHEMA)
            try:
                await self._commit(functools.partial(_add, data=data))
            except Exception as exc:
                for _, done in group:
                    if not done.done():
                        done.set_exception(exc)
            else:
                for _, done in group:
                    if not done.done():
                        done.set_result(None)

    async def mark_gone(self, name: str) -> None:
        """Record that table ``name`` is being deleted (``g:<table>``, kept ``GONE_KEEP_MS``),
        before its tombstone: a process holding views of it drops them when it reads that
        (``policies``; the tombstone alone already stops them being served: its version is
        above theirs), and the registry pass purges the table until then, whatever became of
        the process that deleted it (``Store.maintain_registry``)."""
        await self.put(f"g:{name}", {"at": now_ms()})

    async def gone_tables(self) -> list[str]:
        """The tables deleted within ``GONE_KEEP_MS`` (their ``g:`` entries)."""
        reg = await self._table(create=False)
        if reg is None:
            return []
        rows = (await reg.query().where("key LIKE 'g:%'").select(["key"]).to_arrow()).to_pylist()
        return [str(r["key"])[2:] for r in rows]

    async def remove_table(self, name: str) -> None:
        """Forget a dropped table's partition name (purged from files by ``maintain``)."""
        reg = await self._table(create=False)
        if reg is not None:
            # name is hex: safe in a filter; its system records go with it
            await reg.delete(" OR ".join(f"key = '{kind}:{name}'" for kind in PER_TABLE))

    async def listed(self) -> dict[str, dict[str, Any]]:
        """Every listing record (``s:<table>``), by table; read again only once the registry's
        version moved."""
        reg = self._followed or await self._table(create=False)
        if reg is None:
            return {}
        self._followed = reg
        await reg.checkout_latest()
        version = int(await reg.version())
        if self._listed is not None and self._listed[0] == version:
            return self._listed[1]
        rows = (await reg.query().where(f"key LIKE '{LISTED}:%'").to_arrow()).to_pylist()
        found = {str(r["key"])[2:]: json.loads(r["value"]) for r in rows}
        self._listed = (version, found)
        return found

    async def set_listed(self, name: str, value: dict[str, Any]) -> None:
        """Record (or replace) table ``name``'s listing record."""
        await self.put(f"{LISTED}:{name}", value)

    async def drop_listed(self, name: str) -> None:
        """Remove table ``name``'s listing record (its files purged by ``maintain``)."""
        await self._commit(lambda reg: reg.delete(f"key = '{LISTED}:{name}'"))  # name is hex

    async def partitions(self, existing: set[str]) -> list[str]:
        """Names of the partitions whose tables are in ``existing``, sorted."""
        rows = await self.rows()
        return sorted({v["partition"] for k, v in rows.items()
                       if k.startswith("t:") and k[2:] in existing})

    async def maintain(self, retention: timedelta | None = None) -> None:
        """Drop deleted tables' entries older than ``GONE_KEEP_MS``, compact the registry and
        remove its old versions, so a deleted partition's name leaves every file once its
        versions are older than ``retention``."""
        reg = await self._table(create=False)
        if reg is None:
            return
        rows = (await reg.query().where("key LIKE 'g:%'").to_arrow()).to_pylist()
        old = [str(r["key"]) for r in rows
               if int(json.loads(r["value"])["at"]) < now_ms() - GONE_KEEP_MS]
        if old:  # keys are "g:" and a hex name: safe in a filter
            where = " OR ".join(f"key = '{k}'" for k in old)
            await self._commit(lambda reg: reg.delete(where))
        await asyncio.to_thread(self.upkeep.maintain_small, await reg.uri(), retention)
        await reg.checkout_latest()


async def _add(reg: Any, data: pa.Table) -> None:
    await reg.add(data)


def _secret_row() -> pa.Table:
    """A registry entry holding a new random secret."""
    return pa.table({"key": [SECRET], "value": [json.dumps(secrets.token_hex(32))]},
                    schema=REGISTRY_SCHEMA)
