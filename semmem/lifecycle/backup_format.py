"""What a backup is made of: one object per partition dump and a manifest naming them.

A target (a directory or an S3 prefix) holds ``objects/<sha256>`` — a partition's head, live
items, tombstones and vectors, named by the SHA-256 of its bytes, so an unchanged partition is
one object shared by every backup that holds it — and ``manifests/<id>.json``, written last:
a backup exists once its manifest does. The manifest carries its own digest.

An object is a line ``semmem-partition/1``, a line of JSON (head, items without vectors,
tombstones, and the partition's ledgers of forgotten messages when it has any), then the items'
vectors as little-endian float32 rows in the items' order. The manifest carries the source
store's secret, which the ledgers and the pieces' digests are keyed by (a restore keeps it).
"""

from __future__ import annotations

import hashlib
import json
import re
import secrets
import time
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from semmem.errors import InvalidInput
from semmem.items import Item
from semmem.store import formats
from semmem.store.copies.dump import Dump
from semmem.store.views import Head, Tombstone

MAGIC = b"semmem-partition/1\n"
FORMAT = 1
OBJECTS = "objects"
MANIFESTS = "manifests"
_DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([smhd])\s*$")
_UNIT_S = {"s": 1, "m": 60, "h": 3600, "d": 86400}


def _utf8(text: str) -> bytes:
    # Lone surrogates are valid in a stored text (JSON allows them), not in strict UTF-8.
    return text.encode("utf-8", "surrogatepass")


def encode(dump: Dump) -> bytes:
    """The object holding ``dump``."""
    head = dump.head
    header = {
        "partition": head.partition, "version": head.version, "hwm": head.hwm, "seq": head.seq,
        "model": head.model, "dim": int(dump.vectors.shape[1]) if dump.vectors.ndim == 2 else 0,
        "items": [{"n": it.n, "text": it.text, "ts": it.ts, "updated": it.updated,
                   "revision": it.revision, "seq": it.seq, "model": it.model,
                   "attrs": it.attrs, "created": it.created} for it in dump.items],
        "tombstones": [{"n": t.n, "seq": t.seq, "updated": t.updated, "created": t.created}
                       for t in sorted(dump.tombstones.values(), key=lambda t: t.n)],
        **({"ledgers": dict(sorted(dump.ledgers.items()))} if dump.ledgers else {}),
    }
    vectors = np.ascontiguousarray(dump.vectors, dtype="<f4")
    return MAGIC + _utf8(json.dumps(header, ensure_ascii=False)) + b"\n" + vectors.tobytes()


def decode(data: bytes) -> Dump:
    """The dump an object holds.

    Raises:
        InvalidInput: not an object of this format, or cut short.
    """
    if not data.startswith(MAGIC):
        raise InvalidInput("not a semmem backup object")
    end = data.find(b"\n", len(MAGIC))
    if end < 0:
        raise InvalidInput("backup object cut short")
    try:
        header = json.loads(data[len(MAGIC):end].decode("utf-8", "surrogatepass"))
    except ValueError as exc:
        raise InvalidInput(f"backup object header unreadable: {exc}") from exc
    dim, rows = int(header["dim"]), len(header["items"])
    raw = data[end + 1:]
    if len(raw) != rows * dim * 4:
        raise InvalidInput("backup object's vectors do not match its items")
    vectors = np.frombuffer(raw, dtype="<f4").astype(np.float32).reshape(rows, dim)
    head = Head(header["partition"], int(header["version"]), int(header["hwm"]),
                int(header["seq"]), header["model"])
    items = [Item(n=r["n"], text=r["text"], ts=r["ts"], updated=r["updated"],
                  revision=r["revision"], seq=r["seq"], model=r["model"], attrs=r["attrs"],
                  created=r["created"]) for r in header["items"]]
    tombstones = {int(t["n"]): Tombstone(int(t["n"]), int(t["seq"]), int(t["updated"]),
                                         t["created"]) for t in header["tombstones"]}
    ledgers = {str(k): [str(m) for m in v] for k, v in header.get("ledgers", {}).items()}
    return Dump(head, items, vectors, tombstones, ledgers)


def sha256(data: bytes) -> str:
    """The SHA-256 of ``data`` in hex: an object's name and checksum."""
    return hashlib.sha256(data).hexdigest()


def new_id(at_ms: int) -> str:
    """A backup id that sorts by its start (ms): ``20261201T230512.345Z-1a2b3c``."""
    stamp = time.strftime("%Y%m%dT%H%M%S", time.gmtime(at_ms // 1000))
    return f"{stamp}.{at_ms % 1000:03d}Z-{secrets.token_hex(3)}"


def valid_id(backup_id: str) -> bool:
    """Whether ``backup_id`` has the shape of an id (it is used in an object name)."""
    return re.fullmatch(r"\d{8}T\d{6}\.\d{3}Z-[0-9a-f]{6}", backup_id) is not None


@dataclass(frozen=True)
class Manifest:
    """One backup: when, of what, and one entry per partition (its object and counters)."""

    id: str
    created: int  # epoch ms when the backup started
    finished: int
    source: str
    model: str  # the source store's model and vector width
    dim: int
    partitions: list[dict[str, Any]]
    # The source store's format (``store/formats.py``): a restore records it, and the restored
    # store's first open upgrades it. ``None``: the source recorded none (an earlier release's
    # manifest, or store): the restored store records none either, and its first open tells
    # its format by what its release wrote (``stored/marks.py``).
    store_format: int | None = None
    # The source store's secret (hex): its ledgers' keys and its pieces' digests are HMACs
    # under it, so a restore keeps it. ``None``: an earlier release's manifest (none carried).
    secret: str | None = None
    # Other stores' secrets (hex, by key id) that ledgers an import brought are keyed by
    # (``conversations.ledgers``): a restore keeps them too.
    digest_keys: dict[str, str] = field(default_factory=dict)

    def body(self) -> dict[str, Any]:
        """The manifest's fields, as written (without the digest)."""
        return {"format": FORMAT, "id": self.id, "created": self.created,
                "finished": self.finished, "source": self.source, "model": self.model,
                "dim": self.dim, "partitions": self.partitions,
                **({} if self.store_format is None else {"storeFormat": self.store_format}),
                **({} if self.secret is None else {"secret": self.secret}),
                **({"digestKeys": self.digest_keys} if self.digest_keys else {})}

    def to_bytes(self) -> bytes:
        """The manifest file: its fields and a digest over them."""
        body = self.body()
        return _utf8(json.dumps({**body, "digest": _digest(body)}, ensure_ascii=False,
                                indent=1)) + b"\n"

    @classmethod
    def from_bytes(cls, data: bytes) -> Manifest:
        """A manifest file read back.

        Raises:
            InvalidInput: unreadable, of another format, or its digest does not match.
        """
        try:
            raw = json.loads(data.decode("utf-8", "surrogatepass"))
            digest = raw.pop("digest")
        except (ValueError, KeyError, AttributeError) as exc:
            raise InvalidInput("backup manifest damaged (not readable as a manifest)") from exc
        if raw.get("format") != FORMAT or digest != _digest(raw):
            raise InvalidInput("backup manifest damaged (its digest does not match)")
        return cls(raw["id"], raw["created"], raw["finished"], raw["source"], raw["model"],
                   raw["dim"], raw["partitions"], formats.format_of(
                       {formats.KEY: raw["storeFormat"]}) if "storeFormat" in raw else None,
                   str(raw["secret"]) if isinstance(raw.get("secret"), str) else None,
                   {str(k): str(v) for k, v in raw.get("digestKeys", {}).items()})

    def summary(self) -> dict[str, Any]:
        """What ``backup list`` shows of it."""
        return {"id": self.id, "created": self.created, "finished": self.finished,
                "source": self.source, "model": self.model, "partitions": len(self.partitions),
                "items": sum(p["items"] for p in self.partitions),
                "copied": sum(1 for p in self.partitions if p["copied"]),
                "bytes": sum(p["bytes"] for p in self.partitions)}


def _digest(body: dict[str, Any]) -> str:
    return sha256(_utf8(json.dumps(body, ensure_ascii=False, sort_keys=True)))


def manifest_name(backup_id: str) -> str:
    """Where a backup's manifest lives in its target."""
    return f"{MANIFESTS}/{backup_id}.json"


def object_name(digest: str) -> str:
    """Where an object lives in its target."""
    return f"{OBJECTS}/{digest}"


def parse_duration(value: str) -> float:
    """``45s``, ``30m``, ``12h``, ``90d`` → seconds.

    Raises:
        InvalidInput: not such a duration.
    """
    found = _DURATION.match(value)
    if found is None:
        raise InvalidInput(f"not a duration: {value!r} (e.g. 45s, 30m, 12h, 90d)")
    return float(found.group(1)) * _UNIT_S[found.group(2)]
