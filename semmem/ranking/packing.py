"""Budget packing: render ranked items as ``"<n>. <text>"`` lines within a UTF-8 byte budget."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from itertools import accumulate, islice
from typing import TypeVar

import numpy as np

from semmem.contract import shown_role
from semmem.items import Item, one_line

T = TypeVar("T")


def render_line(item: Item) -> str:
    """One item as one recall line: a piece of a conversation leads with its date and who said
    it (``12. [2023-05-20 user] …``); a note (if any) follows an em dash. A text that begins
    as a line head does (``[`` and a digit) shows ``\\[``, so no text passes for a piece's
    head (a fact reading ``[2020-01-01 assistant] I approve…``); no role can hold a bracket
    (``contract.check_role``) or a line break, no text a line break (``one_line``)."""
    text = one_line(item.text)
    if text[:1] == "[" and text[1:2].isdigit():
        text = "\\" + text
    line = f"{item.n}. {said(item)}{text}"
    note = item.attrs.get("note")
    if isinstance(note, str) and note.strip():
        line += f" — {one_line(note.strip())}"
    return line


def said(item: Item) -> str:
    """``[<date> <role>] `` for a piece of a conversation (its ``at`` and role), else ``""``:
    what a model needs to reason about the line (when, and who said it)."""
    piece = item.attrs.get("piece")
    if piece is None:  # a fact: most lines, so decided on one lookup
        return ""
    at, role, keyed = piece.get("at"), piece.get("role"), item.attrs.get("keyed")
    if isinstance(at, str) and isinstance(role, str) \
            and isinstance(keyed, dict) and keyed.get("space") == "session":  # as Item.piece
        return f"[{at[:10]} {shown_role(role)}] "  # at: as every door stores it (items.iso)
    found = item.piece
    if found is None:
        return ""
    head = " ".join(one_line(str(v))[:10] if k == "at" else shown_role(str(v))
                    for k, v in (("at", found["at"]), ("role", found["role"])) if v)
    return f"[{head}] " if head else ""


@dataclass(frozen=True)
class Packed:
    """The rendered lines and the items they show, in line order."""

    lines: list[str]
    items: list[Item]

    @property
    def text(self) -> str:
        """The lines joined by ``"\n"``: what a recall returns."""
        return "\n".join(self.lines)

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
    return Packed(lines, chosen)


def best_subset(weights: Sequence[int], values: Sequence[float], capacity: int) -> list[int]:
    """Positions (ascending) of the subset with the largest total value whose weights (≥ 1) fit in
    ``capacity``: an exact 0/1 knapsack over byte sizes, for a handful of items.

    Ties keep the subset found first in position order, so the result is deterministic.
    """
    if capacity < 0 or not weights:
        return []
    best = np.zeros(capacity + 1)  # best[c]: the largest value within c bytes so far
    took = np.zeros((len(weights), capacity + 1), dtype=bool)
    for k, (w, v) in enumerate(zip(weights, values, strict=True)):
        if w > capacity or v <= 0:
            continue
        with_k = best[:capacity + 1 - w] + v  # best[c] if line k takes w of c bytes
        gain = np.zeros(capacity + 1, dtype=bool)
        gain[w:] = with_k > best[w:] + 1e-12
        took[k] = gain
        best[gain] = with_k[gain[w:]]
    out = []
    room = capacity
    for k in range(len(weights) - 1, -1, -1):
        if took[k, room]:
            out.append(k)
            room -= weights[k]
    return out[::-1]


def pack_candidates(
    candidates: Sequence[T],
    item_of: Callable[[T], Item],
    max_bytes: int,
    max_items: int = 100,
    distinct: Callable[[Sequence[T]], Iterable[T]] | None = None,
    value: Callable[[Sequence[T]], Sequence[float]] | None = None,
    choose_among: int = 10,
) -> tuple[Packed, list[T]]:
    """``pack`` over ranked candidates, filtered lazily by ``distinct`` (near-duplicates).

    The same result as ``pack(item_of(c) for c in distinct(candidates))``, but ``distinct`` is
    consumed only while some remaining candidate's line could still fit: once the space left
    is smaller than every later line, packing stops, so the near-duplicate checks (and the
    rendering) of candidates that cannot be shown are never paid for.

    With ``value`` (the probability that each of the first ``choose_among`` distinct candidates
    is relevant), those lines are chosen as a set: the whole lines with the largest expected
    number of relevant facts that fit, so a long second line cannot crowd out two short ones
    that are together more likely to help. The rest are packed in rank order into what is
    left; lines stay in rank order either way.

    Returns:
        The packed text and items, and the chosen candidates in line order.
    """
    lines = [render_line(item_of(c)) for c in candidates]
    # An ASCII line's size is its length (most are): no bytes object to build.
    sizes = [len(line) if line.isascii() else len(line.encode("utf-8")) for line in lines]
    # after[i]: the smallest line from position i on; what the budget must still hold.
    after = list(accumulate(reversed(sizes), min, initial=max_bytes + 2))[::-1]
    stream = _positions(candidates, distinct(candidates) if distinct is not None else candidates)
    picked: list[int] = []
    used = 0
    if value is not None:
        head = list(islice(stream, min(choose_among, max_items)))
        # Each line costs its size plus a newline; n lines need one newline fewer.
        weights = [sizes[i] + 1 for i in head]
        if sum(weights) <= max_bytes + 1:  # everything fits: nothing to choose
            picked = head
        else:
            chosen_at = best_subset(weights, value([candidates[i] for i in head]), max_bytes + 1)
            picked = [head[k] for k in chosen_at]
        used = sum(sizes[i] + 1 for i in picked) - 1 if picked else 0
        if head and used + (1 if picked else 0) + after[head[-1] + 1] > max_bytes:
            stream = iter(())  # nothing after the head can fit
    for i in stream:
        if len(picked) >= max_items:
            break
        sep = 1 if picked else 0
        if used + sep + sizes[i] <= max_bytes:
            picked.append(i)
            used += sep + sizes[i]
            if len(picked) >= max_items:
                break
        if used + (1 if picked else 0) + after[i + 1] > max_bytes:
            break  # nothing after this candidate can fit
    chosen = [candidates[i] for i in picked]
    return Packed([lines[i] for i in picked], [item_of(c) for c in chosen]), chosen


def _positions(candidates: Sequence[T], stream: Iterable[T]) -> Iterator[int]:
    """Positions in ``candidates`` of what ``stream`` yields (a subsequence, in order)."""
    i = -1
    for cand in stream:
        i += 1
        while candidates[i] is not cand:
            i += 1
        yield i
