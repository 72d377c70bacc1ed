"""Budget packing: render ranked items as ``"<n>. <text>"`` lines within a UTF-8 byte budget."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from semmem.items import Item, one_line


def render_line(item: Item) -> str:
    """One item as one recall line; a note (if any) follows an em dash."""
    line = f"{item.n}. {one_line(item.text)}"
    note = item.attrs.get("note")
    if isinstance(note, str) and note.strip():
        line += f" — {one_line(note.strip())}"
    return line


@dataclass(frozen=True)
class Packed:
    """The rendered text and the items whose lines it holds, in line order."""

    text: str
    items: list[Item]

    @property
    def bytes(self) -> int:
        """Size of ``text`` in UTF-8 bytes."""
        return len(self.text.encode("utf-8"))


def pack(ranked: Iterable[Item], max_bytes: int, max_items: int = 100) -> Packed:
    """Take whole lines in rank order while they fit in ``max_bytes`` (joined by ``"\\n"``).

    A line that does not fit in the space left is skipped and packing continues with the next
    ones, so smaller relevant items still use the budget. Never splits a line or a character.
    """
    lines: list[str] = []
    chosen: list[Item] = []
    used = 0
    for item in ranked:
        if len(chosen) >= max_items:
            break
        line = render_line(item)
        size = len(line.encode("utf-8")) + (1 if lines else 0)
        if used + size > max_bytes:
            if max_bytes - used < 4:  # no line ("n. x") can fit any more
                break
            continue
        lines.append(line)
        chosen.append(item)
        used += size
    return Packed("\n".join(lines), chosen)
