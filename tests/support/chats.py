"""A short conversation the ledger tests share: four messages of session ``s1`` (the last long
enough to be cut in two pieces), and what reads its pieces back."""

from __future__ import annotations

from semmem.conversations.messages import Message
from semmem.conversations.pieces import SESSION
from semmem.items import parse_iso
from semmem.items.address import Address
from semmem.keyed.items import Keyed
from semmem.memory import Memory

S1 = Address.of(SESSION, "s1")
LONG = " ".join(f"Sentence {i} of a long message about the garden." for i in range(8))


def said(role: str, text: str, at: str) -> Message:
    """A message of ``role`` said at ISO time ``at``."""
    return Message(role, text, parse_iso(at))


CHAT = [said("user", "I adopted a cat named Miso.", "2023-01-10T09:00:00Z"),
        said("assistant", "Miso is a lovely name.", "2023-01-10T09:01:00Z"),
        said("user", "Miso now sleeps on my desk.", "2023-03-02T18:00:00Z"),
        said("user", LONG, "2023-03-03T10:00:00Z")]


async def texts(memory: Memory) -> list[str]:
    """The texts of session ``s1``'s live pieces in partition ``p``."""
    return [it.text for it in await Keyed(memory).pieces("p", S1)]
