"""Budget packing: render ranked items as ``"<n>. <text>"`` lines within a UTF-8 byte budget."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from itertools import accumulate
from typing import TypeVar

from semmem.items import Item, one_line

T = TypeVar("T")


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


def pack_candidates(
    candidates: Sequence[T],
    item_of: Callable[[T], Item],
    max_bytes: int,
    max_items: int = 100,
    distinct: Callable[[Sequence[T]], Iterable[T]] | None = None,
) -> tuple[Packed, list[T]]:
    """``pack`` over ranked candidates, filtered lazily by ``distinct`` (near-duplicates).

    The same result as ``pack(item_of(c) for c in distinct(candidates))``, but ``distinct`` is
    consumed only while some remaining candidate's line could still fit: once the space left
    is smaller than every later line, packing stops, so the near-duplicate checks (and the
    rendering) of candidates that cannot be shown are never paid for.

    Returns:
        The packed text and items, and the chosen candidates in line order.
    """
    lines = [render_line(item_of(c)) for c in candidates]
    # An ASCII line's size is its length (most are): no bytes object to build.
    sizes = [len(line) if line.isascii() else len(line.encode("utf-8")) for line in lines]
    # after[i]: the smallest line from position i on; what the budget must still hold.
    after = list(accumulate(reversed(sizes), min, initial=max_bytes + 2))[::-1]
    stream = distinct(candidates) if distinct is not None else candidates
    chosen: list[T] = []
    text: list[str] = []
    used = 0
    i = -1
    for cand in stream:
        # ``distinct`` yields a subsequence of ``candidates`` in order: find its position.
        i += 1
        while candidates[i] is not cand:
            i += 1
        sep = 1 if text else 0
        if used + sep + sizes[i] <= max_bytes:
            text.append(lines[i])
            chosen.append(cand)
            used += sep + sizes[i]
            if len(chosen) >= max_items:
                break
        if used + (1 if text else 0) + after[i + 1] > max_bytes:
            break  # nothing after this candidate can fit
    return Packed("\n".join(text), [item_of(c) for c in chosen]), chosen
