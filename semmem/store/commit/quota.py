"""Per-partition quotas (``SEMMEM_PARTITION_MAX_ITEMS``, ``SEMMEM_PARTITION_MAX_BYTES``).

Checked by the writer inside the write decision (``Writer._decide``): on the write view of the
version the group commits on, after the writes before it in the same group, so two writers in
one group commit, or on two replicas, cannot both take the last place — the second decides
again on the version the first committed and is refused.
"""

from __future__ import annotations

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
            for caller, what in ((Caller.MODEL, "facts"), (Caller.APPLICATION, "store items' "
                                                           "pieces")):
                now = counted(caller, after.live, after.application)
                was = counted(caller, before.live, before.application)
                if now > self.max_items and now > was:
                    raise QuotaExceeded(
                        f"this memory is full: at most {self.max_items} {what} per partition; "
                        f"forget or update {what} that are no longer needed",
                        {"quota": "items", "limit": self.max_items, "usage": was,
                         "audience": caller.value})
        if self.max_bytes is None or before.text_bytes is None or after.text_bytes is None:
            return
        for caller, what in ((Caller.MODEL, "facts"), (Caller.APPLICATION, "store items' "
                                                       "index texts")):
            now = counted(caller, after.text_bytes, after.application_bytes or 0)
            was = counted(caller, before.text_bytes, before.application_bytes or 0)
            if now > self.max_bytes and now > was:
                raise QuotaExceeded(
                    f"this memory is full: at most {self.max_bytes} bytes of {what} per "
                    f"partition; forget or shorten {what} that are no longer needed",
                    {"quota": "bytes", "limit": self.max_bytes, "usage": was,
                     "audience": caller.value})
