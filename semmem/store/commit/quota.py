"""Per-partition quotas (``SEMMEM_PARTITION_MAX_ITEMS``, ``SEMMEM_PARTITION_MAX_BYTES``).

Checked by the writer inside the write decision (``Writer._decide``): on the write view of the
version the group commits on, after the writes before it in the same group, so two writers in
one group commit, or on two replicas, cannot both take the last place — the second decides
again on the version the first committed and is refused.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from semmem.audience import Caller, counted
from semmem.errors import QuotaExceeded
from semmem.store.views import WriteView


@dataclass(frozen=True)
class Quota:
    """The most live items of each audience (the model's facts and conversation pieces, the
    application's store items' pieces: ``semmem.audience``), and UTF-8 bytes of all their
    texts, one partition may hold."""

    max_items: int | None = None
    max_bytes: int | None = None

    @property
    def counts_bytes(self) -> bool:
        """Whether write views must carry their live text bytes."""
        return self.max_bytes is not None

    def check(self, before: WriteView, after: WriteView) -> None:
        """Refuse a write that takes the partition past a limit. A write that does not grow
        what is over (a forget, a shorter text, a lowered limit) is never refused.

        Raises:
            QuotaExceeded: the partition would hold more than a limit allows.
        """
        if self.max_items is not None:
            # Each audience's items against the limit on their own (``semmem.audience``): the
            # model's facts cannot crowd out the application's items, nor these the facts.
            _within("items", self.max_items, "{what}", "forget or update",
                    ((Caller.MODEL, "facts"), (Caller.APPLICATION, "store items' pieces")),
                    lambda caller, v: counted(caller, v.live, v.application), before, after)
        if self.max_bytes is None or before.text_bytes is None or after.text_bytes is None:
            return
        _within("bytes", self.max_bytes, "bytes of {what}", "forget or shorten",
                ((Caller.MODEL, "facts"), (Caller.APPLICATION, "store items' index texts")),
                lambda caller, v: counted(caller, v.text_bytes or 0, v.application_bytes or 0),
                before, after)


def _within(quota: str, limit: int, unit: str, remedy: str,
            audiences: tuple[tuple[Caller, str], ...], usage: Callable[[Caller, WriteView], int],
            before: WriteView, after: WriteView) -> None:
    """Refuse a write that takes one audience's ``usage`` past ``limit`` and grows it."""
    for caller, what in audiences:
        now, was = usage(caller, after), usage(caller, before)
        if now > limit and now > was:
            raise QuotaExceeded(
                f"this memory is full: at most {limit} {unit.format(what=what)} per "
                f"partition; {remedy} {what} that are no longer needed",
                {"quota": quota, "limit": limit, "usage": was, "audience": caller.value})
