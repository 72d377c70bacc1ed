"""The format gate's steps of the application's store items (``semmem/store/formats.py``):
from format 1, the store items an earlier release kept as facts made store items again
(``items_from_facts``); from format 2, the listing of namespaces an earlier release kept as a
partition made the store's listing records (``listings_from_partition``). Both work through the
core's doors (``semmem.stored.ports.Holdings``), never ``Memory`` or its store.

Up to ``e601069`` the Python client's ``SemmemStore`` kept a LangGraph item as a fact of its
namespace's partition (the mapping of today, ``namespaces.partition_of``): its text the
canonical JSON of ``{"key", "value"}`` and, when given, ``"ttl"`` (minutes) and
``"index": false`` (sorted keys, no spaces), its time the item's creation, an owner's edit
its update and its ``expiresAt``. Each such fact becomes the item a put makes today (its
namespace listed, its address, its value, its index text: LangGraph's default, the whole
value as JSON, none for ``index: false``), with the fact's creation and update times and its
expiry, and the fact is forgotten in the same write (``Put.former``): the model no longer
sees it, the application finds it again. A fact is taken only when its text is exactly what
that adapter wrote; of two facts of one key (two puts at once) the later is the item, the
other is forgotten with it. Every write decides on the partition as it commits, so the step
runs again where a crash or another process left it, and a fact forgotten meanwhile stays so.

Releases up to ``62c1cbc`` listed the namespaces holding store items in the partition
``FORMER_LISTING`` (a keyed item of space ``store-ns`` per namespace, its key the namespace:
often a user's id), where today the write path keeps a listing record per partition (system
records, ``semmem.store.system``). The step derives every partition's record from its data
(``relist``: any partition may hold store items), then deletes that partition through the
delete path (its names leave every file within the forget window, as any deleted partition's).
Run again, it derives nothing new and finds the partition gone.
"""

from __future__ import annotations

import json
import math
from collections.abc import Awaitable, Callable
from dataclasses import replace
from typing import Any

from semmem.errors import InvalidArguments
from semmem.items import Item
from semmem.items.address import Address
from semmem.stored.items import Put, StoreItems
from semmem.stored.namespaces import namespace_of, partition_of
from semmem.stored.ports import Holdings

# Called after each step of a partition's upgrade (from format 1, ``"listed"``: its facts read;
# ``"written"``: its items written; from format 2, ``"relisted"``: every listing record
# derived; ``"deleted"``: the former listing deleted): tests interrupt the upgrade there.
Hook = Callable[[str, str], Awaitable[None]]
FORMER_LISTING = "%store-namespaces"  # no namespace maps here: a label's ``%`` is ``%25``
FIELDS = frozenset({"key", "value", "ttl", "index"})
CHUNK = 256  # items per write


def fact_text(body: dict[str, Any]) -> str:
    """The text that release wrote for ``body``."""
    return json.dumps(body, ensure_ascii=False, sort_keys=True, separators=(",", ":"))


def former_put(item: Item) -> Put | None:
    """The put an earlier release's store item (a fact) stands for, ``None`` for any other
    fact."""
    text = item.text
    if item.attrs.get("keyed") is not None or not text.startswith("{") or '"key":' not in text:
        return None
    try:
        body = json.loads(text)
    except ValueError:
        return None
    if not isinstance(body, dict) or not set(body) <= FIELDS or fact_text(body) != text:
        return None
    key, value, ttl = body.get("key"), body.get("value"), body.get("ttl")
    if not isinstance(value, dict) or body.get("index", False) is not False:
        return None
    if ttl is not None and (isinstance(ttl, bool) or not isinstance(ttl, int | float)
                            or not math.isfinite(ttl) or ttl <= 0):
        return None
    try:
        key = Address.of("store", key).key
    except InvalidArguments:
        return None  # a key today's store cannot hold: left a fact
    indexed = "index" not in body
    texts = (json.dumps(value, sort_keys=True, ensure_ascii=False),) if indexed else ()
    return Put(key, value, texts, None if ttl is None else float(ttl), former=(item,))


async def items_from_facts(core: Holdings, hook: Hook | None = None) -> int:
    """Make every earlier release's store item of ``core`` a store item; how many."""
    items = StoreItems(core, in_place=True)  # the facts are forgotten in the same write
    done = 0
    for partition in await core.partitions():
        try:
            namespace = namespace_of(partition)
            if partition_of(namespace) != partition:
                continue  # no namespace maps here (the namespace registry's, say)
        except InvalidArguments:
            continue
        latest: dict[str, Put] = {}
        # expired ones too (they stay expired), in number order: of one key's facts the later wins
        for item in await core.every_item(partition):
            put = former_put(item)
            if put is not None:
                earlier = latest[put.key].former if put.key in latest else ()
                latest[put.key] = replace(put, former=(*earlier, item))
        if not latest:
            continue
        if hook is not None:
            await hook("listed", partition)
        puts = list(latest.values())
        for start in range(0, len(puts), CHUNK):
            written = await items.put_many(namespace, puts[start:start + CHUNK])
            done += sum(1 for w in written if w["items"])
        if hook is not None:
            await hook("written", partition)
    return done


async def listings_from_partition(core: Holdings, hook: Hook | None = None) -> int:
    """Derive every partition's listing record, then delete ``FORMER_LISTING``; how many
    records were derived anew."""
    derived = 0
    for partition in await core.partitions():
        if partition != FORMER_LISTING and await core.relist(partition):
            derived += 1
    if hook is not None:
        await hook("relisted", FORMER_LISTING)
    await core.delete_partition(FORMER_LISTING)  # False: gone already (a rerun, a replica)
    if hook is not None:
        await hook("deleted", FORMER_LISTING)
    return derived
