"""What the console's pages show, read from the memory core (no HTTP here)."""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Any

from semmem.audience import Caller, may_see
from semmem.contract import make_cursor, sha256_hex
from semmem.items import Item
from semmem.items.filters import Filter, pairs, typed
from semmem.items.metadata import Scalar, clean_metadata
from semmem.memory import Memory
from semmem.ranking.ranker import Scored
from semmem.scoped import filtered

EDITABLE = ("note", "status", "surfacing", "expiresAt")  # the edit form's record fields
PAGE_SIZE = 25
PARTITIONS_PAGE_SIZE = 25  # each listed partition is read
_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")


@dataclass(frozen=True)
class PartitionRow:
    """One line of the partitions page."""

    name: str
    count: int
    last_update: int | None


@dataclass(frozen=True)
class Paging:
    """Where a page sits among all pages (pages count from 1)."""

    page: int
    pages: int
    total: int
    size: int

    @classmethod
    def of(cls, page: int, total: int, size: int) -> Paging:
        """Clamp ``page`` into the pages that exist."""
        pages = max(1, math.ceil(total / size))
        return cls(min(max(page, 1), pages), pages, total, size)

    @property
    def offset(self) -> int:
        """Index of the first entry on this page."""
        return (self.page - 1) * self.size


async def partitions_page(memory: Memory, prefix: str, page: int
                          ) -> tuple[list[PartitionRow], Paging]:
    """Partitions whose name starts with ``prefix``, one page, with counts and last update.

    Only the partitions on the page are read, through the store's read view (what recall
    reads): a large, indexed partition gives its count without loading its items, and its last
    update is that of its most recently updated live item.
    """
    names = [n for n in await memory.owned_partitions() if n.startswith(prefix)]
    paging = Paging.of(page, len(names), PARTITIONS_PAGE_SIZE)
    rows = []
    for name in names[paging.offset:paging.offset + paging.size]:
        stats = await memory.stats(name)
        rows.append(PartitionRow(name, stats["count"], await memory.last_update(name)))
    return rows, paging


@dataclass(frozen=True)
class PartitionView:
    """The partition page's data: counters, one page of items newest first, the read cursor."""

    partition: str
    count: int
    highest: int
    forgotten: int
    model: str | None
    last_update: int | None
    items: list[Item]
    paging: Paging
    cursor: str
    text_bytes: int = 0  # what the byte quota counts
    max_items: int | None = None  # the partition quotas, if set
    max_bytes: int | None = None
    retention: str = "never"  # the effective policy
    meta: str = ""  # the metadata filter of the listing, as typed (one key=value a line)
    matching: int | None = None  # how many items it covers (``None``: no filter)


def _lines(text: str) -> list[str]:
    """A form's ``key=value`` box: its lines, stripped, blank ones left out."""
    return [line.strip() for line in text.splitlines() if line.strip()]


def meta_filter(text: str) -> Filter | None:
    """The listing's metadata filter from ``key=value`` lines (``None`` when blank).

    Raises:
        InvalidArguments: a line without ``=``, or metadata that breaks its rules.
    """
    lines = _lines(text)
    found = pairs(lines, "a metadata filter") if lines else None
    return Filter.parse({"metadata": found}) if found else None


def metadata_of(text: str) -> dict[str, Scalar] | None:
    """The metadata typed in an add or edit form, one ``key=value`` a line, each value read as
    the CLI's ``--meta`` reads it (``None`` when blank).

    Raises:
        InvalidArguments: a line without ``=``, or metadata that breaks its rules.
    """
    lines = _lines(text)
    return clean_metadata(pairs(lines, "metadata") if lines else None)


def metadata_text(metadata: dict[str, Any]) -> str:
    """Metadata as the forms take it: one ``key=value`` a line, by key (``metadata_of`` reads
    it back to the same object)."""
    return "\n".join(typed(k, v) for k, v in sorted(metadata.items()))


def edit_values(item: Item) -> dict[str, str]:
    """The edit form's fields filled from ``item``."""
    return {"text": item.text, **{f: str(item.attrs.get(f) or "") for f in EDITABLE},
            "metadata": metadata_text(item.metadata)}


async def partition_view(memory: Memory, partition: str, page: int,
                         meta: str = "") -> PartitionView:
    """One page of a partition's items, highest number (newest) first (those ``meta``, a
    metadata filter as ``key=value`` lines, covers).

    Raises:
        InvalidArguments: ``meta`` is no metadata filter.
    """
    flt = meta_filter(meta)
    snap = await memory.snapshot(partition)
    listed = filtered.listed(list(snap.items), flt)
    paging = Paging.of(page, len(listed), PAGE_SIZE)
    newest_first = listed[::-1]
    return PartitionView(
        partition, snap.count, snap.hwm, len(snap.tombstones), snap.model, snap.last_update,
        newest_first[paging.offset:paging.offset + paging.size], paging,
        make_cursor(partition, snap.seq), snap.text_bytes,
        memory.quota.max_items, memory.quota.max_bytes,
        (await memory.retention.policy(partition)).public()["effective"],
        meta.strip() if flt else "", None if flt is None else len(listed),
    )


async def item_view(memory: Memory, partition: str, n: int) -> tuple[Item | None, str]:
    """Item ``n`` (``None`` if it is not live, or a system record the owner's listings never
    show: ``semmem.audience``) and the cursor of the state it was read in."""
    snap = await memory.snapshot(partition)
    got = snap.get(n)
    return (got if got is not None and may_see(Caller.OWNER, got) else None,
            make_cursor(partition, snap.seq))


def confirm_phrase(partition: str) -> str:
    """What an owner types to delete a partition: its name, or a short id if it is untypable."""
    if partition.isprintable() and partition == partition.strip() and len(partition) <= 100:
        return partition
    return f"partition-{sha256_hex(partition)[:12]}"


def export_filename(partition: str) -> str:
    """A safe ASCII download name that still hints at the partition."""
    slug = _UNSAFE.sub("-", partition).strip("-.")[:40] or "partition"
    return f"semmem-{slug}-{sha256_hex(partition)[:8]}.jsonl"


def recall_scores(scored: list[Scored]) -> dict[str, float]:
    """Each recalled item's ranking score, by source id."""
    return {str(s.item.n): round(float(s.score), 4) for s in scored}


def utf8_len(text: str) -> int:
    """Bytes of ``text`` in UTF-8 (what ``maxBytes`` counts)."""
    return len(text.encode("utf-8"))
