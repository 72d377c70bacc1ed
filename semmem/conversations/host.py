"""What conversations need of a memory, declared here: a narrow ``Protocol`` the caller hands
in (``Memory`` is one), so this package never names the memory above it nor reaches into its
store."""

from __future__ import annotations

from collections.abc import Collection, Iterable
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from semmem.items import Vectors
    from semmem.keyed.items import Keyed
    from semmem.rules import Alive, Operation
    from semmem.store.rows import Plan


class Expiry(Protocol):
    """What has expired, as much as sessions ask (``lifecycle.retention.Retention`` is one)."""

    async def counted(self, partition: str, result: dict[str, Any], *,
                      sets_expiry: bool = False) -> dict[str, Any]:
        """A write's result with ``count`` leaving out the facts expired now."""
        ...


class Host(Protocol):
    """A memory's write path and store, as much as sessions use of them."""

    @property
    def idempotency_ttl_ms(self) -> int:
        """How long an operation's record replays."""
        ...

    @property
    def retention(self) -> Expiry:
        """What has expired (a write's rules and a result's count leave it out)."""
        ...

    @property
    def secret(self) -> bytes:
        """The store's secret: keys digests and operation fingerprints (no guessed text is
        confirmed without it)."""
        ...

    async def digest_keys(self, ids: Collection[str]) -> dict[str, bytes]:
        """Other stores' secrets known to the store, by key id (an import's ledgers:
        ``conversations.ledgers``); its registry read first when one of ``ids`` is not."""
        ...

    @property
    def keyed(self) -> Keyed:
        """Keyed items (sessions) of the same memory: looked up, committed, forgotten."""
        ...

    async def liveness(self, partition: str) -> Alive:
        """The partition's test of "not expired now"."""
        ...

    async def embed_passages(self, texts: list[str], *, caller: str = "") -> Vectors:
        """Vectors of stored texts, on the model thread (one call), charged to ``caller``."""
        ...

    async def commit(self, partition: str, plan: Plan, op: Operation | None,
                     dropped: bool = False, *, numbers: Iterable[Any] = (),
                     records: Iterable[str] = ()) -> dict[str, Any]:
        """Commit ``plan`` (one compare-and-swap write, its rows and records looked up)."""
        ...
