"""Structures a snapshot shares with the snapshots evolved from it (``store/reads/evolve.py``), so a
write costs what it changes, not the partition's size; an older snapshot never sees a newer
one's change.

- ``Grown``: an array with room to grow; views of its first rows are handed out, and only the
  newest view may append in place (rows past an older view's length are not its own).
- ``ItemRows``: the items in chunks; a change copies the chunks it touches and the chunk list.
- ``NumberMap``: number → row, by binary search over the numbers in row order.
- ``KeyIndex``/``KeyMap``: dedupe key → number, from an append-only index of every number a
  key has had in the lineage, checked against the snapshot's own items.
- ``Layered``: a mapping as a small top layer of changes over a shared base.

Only numpy here (ranking imports it).
"""

from __future__ import annotations

import threading
from bisect import bisect_right
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from itertools import chain
from typing import Any, SupportsIndex, TypeVar, overload

import numpy as np
import numpy.typing as npt

from semmem.items import Item, dedupe_key

K = TypeVar("K")
V = TypeVar("V")

CHUNK = 512  # items per chunk of ``ItemRows``


class Grown:
    """An array with room for more rows: views of its first rows are handed out, and the
    newest one may append in place (older views never see rows past their own length)."""

    def __init__(self, first: npt.NDArray[Any], *more: npt.NDArray[Any]) -> None:
        """A buffer of ``first`` followed by ``more``, copied once, with room for as many
        again (pages of the room are only touched when rows land there)."""
        rows = len(first) + sum(len(m) for m in more)
        self.array: npt.NDArray[Any] = np.empty((max(16, rows * 2), *first.shape[1:]),
                                                first.dtype)
        at = 0
        for part in (first, *more):
            self.array[at:at + len(part)] = part
            at += len(part)
        self.filled = rows
        self.lock = threading.Lock()

    @property
    def view(self) -> npt.NDArray[Any]:
        """The rows filled so far."""
        return self.array[:self.filled]

    def extend(self, length: int, rows: npt.NDArray[Any]) -> npt.NDArray[Any] | None:
        """The first ``length`` rows followed by ``rows``, in place when the view of ``length``
        rows is the newest and there is room; ``None`` otherwise."""
        with self.lock:
            end = length + len(rows)
            if self.filled != length or end > len(self.array):
                return None
            self.array[length:end] = rows
            self.filled = end
            return self.array[:end]


def grown(buffer: Any, current: npt.NDArray[Any], rows: npt.NDArray[Any]
          ) -> tuple[npt.NDArray[Any], Grown]:
    """``current`` followed by ``rows``: appended in place to ``buffer`` (the ``Grown`` that
    ``current`` is a view of) when it can be, else copied once into a new one."""
    if isinstance(buffer, Grown):
        view = buffer.extend(len(current), rows)
        if view is not None:
            return view, buffer
    fresh = Grown(current, rows)
    return fresh.view, fresh


class ItemRows(Sequence[Item]):
    """A snapshot's items in row order, held in chunks shared with the snapshots before and
    after it: a change copies the chunks it touches and the list of chunks (n / 512 pointers),
    never the items."""

    __slots__ = ("_chunks", "_length", "_starts")

    def __init__(self, chunks: list[list[Item]]) -> None:
        self._chunks = [c for c in chunks if c]
        starts, at = [], 0
        for c in self._chunks:
            starts.append(at)
            at += len(c)
        self._starts = starts
        self._length = at

    @classmethod
    def of(cls, items: Sequence[Item]) -> ItemRows:
        """``items`` as chunks (the items themselves are shared)."""
        if isinstance(items, ItemRows):
            return items
        return cls([list(items[i:i + CHUNK]) for i in range(0, len(items), CHUNK)])

    def __len__(self) -> int:
        return self._length

    def _locate(self, i: SupportsIndex) -> tuple[int, int]:
        i = i.__index__()
        if i < 0:
            i += self._length
        if not 0 <= i < self._length:
            raise IndexError("item row out of range")
        c = bisect_right(self._starts, i) - 1
        return c, i - self._starts[c]

    @overload
    def __getitem__(self, i: SupportsIndex) -> Item: ...

    @overload
    def __getitem__(self, i: slice) -> list[Item]: ...

    def __getitem__(self, i: SupportsIndex | slice) -> Item | list[Item]:
        if isinstance(i, slice):
            start, stop, step = i.indices(self._length)
            if step != 1:
                return list(self)[i]
            if start >= stop:
                return []
            c, at = self._locate(start)
            out: list[Item] = []
            while len(out) < stop - start:
                out.extend(self._chunks[c][at:at + stop - start - len(out)])
                c, at = c + 1, 0
            return out
        c, at = self._locate(i)
        return self._chunks[c][at]

    def __iter__(self) -> Iterator[Item]:
        return chain.from_iterable(self._chunks)

    def __reversed__(self) -> Iterator[Item]:
        return chain.from_iterable(reversed(c) for c in reversed(self._chunks))

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Sequence):
            return NotImplemented
        return len(self) == len(other) and all(a == b for a, b in zip(self, other, strict=True))

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"ItemRows({list(self)!r})"

    def changed(self, removed: Sequence[int], replaced: Mapping[int, Item],
                appended: Sequence[Item]) -> ItemRows:
        """These rows with rows ``removed`` cut (old rows), then rows ``replaced`` (new rows)
        and ``appended`` at the end; only the chunks touched are copied."""
        chunks = list(self._chunks)
        starts = self._starts
        touched: dict[int, set[int]] = {}
        for row in removed:
            c, at = self._locate(row)
            touched.setdefault(c, set()).add(at)
        for c in sorted(touched, reverse=True):
            cut = touched[c]
            chunks[c] = [it for j, it in enumerate(chunks[c]) if j not in cut]
        if removed:
            rows = ItemRows(chunks)
            chunks, starts = rows._chunks, rows._starts
        copied: set[int] = set()
        for row, item in replaced.items():
            c = bisect_right(starts, row) - 1
            if c not in copied:
                chunks[c] = list(chunks[c])
                copied.add(c)
            chunks[c][row - starts[c]] = item
        if appended:
            tail = list(chunks.pop()) if chunks and len(chunks[-1]) < CHUNK else []
            tail.extend(appended)
            chunks.extend(tail[i:i + CHUNK] for i in range(0, len(tail), CHUNK))
        if not removed and not appended:
            rows = ItemRows.__new__(ItemRows)
            rows._chunks, rows._starts, rows._length = chunks, starts, self._length
            return rows
        return ItemRows(chunks)


class NumberMap(Mapping[int, int]):
    """Number → row of a snapshot, by binary search over its numbers in row order (shared
    with the snapshots evolved from it: a view of a ``Grown``)."""

    __slots__ = ("numbers",)

    def __init__(self, numbers: npt.NDArray[np.int64]) -> None:
        self.numbers = numbers

    def get(self, n: object, default: Any = None) -> Any:
        if not isinstance(n, int | np.integer):
            return default
        i = int(np.searchsorted(self.numbers, n))
        if i < len(self.numbers) and self.numbers[i] == n:
            return i
        return default

    def __getitem__(self, n: int) -> int:
        i = self.get(n)
        if i is None:
            raise KeyError(n)
        return int(i)

    def __contains__(self, n: object) -> bool:
        return self.get(n) is not None

    def __len__(self) -> int:
        return len(self.numbers)

    def __iter__(self) -> Iterator[int]:
        return iter(self.numbers.tolist())


def key_rank(item: Item) -> tuple[bool, int]:
    """Which of several items with the same dedupe key a lookup finds: one recall can show
    before a hidden one, then the highest number."""
    return item.surfaced, item.n


class KeyIndex:
    """Every number each dedupe key has had in a lineage of snapshots: the map of the
    snapshot it started from (each key's numbers) and the numbers given a key since, only
    ever added to (what each snapshot holds decides which still count)."""

    def __init__(self, base: Mapping[str, int | list[int]]) -> None:
        self.base = base
        self.more: dict[str, list[int]] = {}
        self.lock = threading.Lock()

    @classmethod
    def of(cls, items: Iterable[Item], by_key: Mapping[str, int], size: int) -> KeyIndex:
        """The index of a snapshot's items: its key map as it is when no key is shared,
        else every key's numbers (one pass over the texts)."""
        if len(by_key) == size:
            return cls(by_key)
        numbers: dict[str, list[int]] = {}
        for it in items:
            numbers.setdefault(dedupe_key(it.text), []).append(it.n)
        return cls(numbers)

    def add(self, items: Iterable[Item]) -> None:
        """Record the keys of new or changed ``items``."""
        with self.lock:
            for it in items:
                key = dedupe_key(it.text)
                held = self.more.setdefault(key, [])
                if it.n not in held:
                    held.append(it.n)

    def numbers(self, key: str) -> list[int]:
        """Every number ``key`` has had (some may no longer hold it)."""
        base = self.base.get(key)
        found = [] if base is None else [base] if isinstance(base, int) else list(base)
        return found + self.more.get(key, [])

    def recorded(self) -> list[str]:
        """Every key recorded."""
        with self.lock:
            return list(dict.fromkeys(chain(self.base, self.more)))


class KeyMap(Mapping[str, int]):
    """Dedupe key → the number of the item ``key_rank`` prefers among a snapshot's items with
    that key, resolved from a shared ``KeyIndex`` against the snapshot's own items."""

    __slots__ = ("index", "item")

    def __init__(self, index: KeyIndex, item: Callable[[int], Item | None]) -> None:
        self.index = index
        self.item = item

    def get(self, key: object, default: Any = None) -> Any:
        if not isinstance(key, str):
            return default
        best: Item | None = None
        for n in self.index.numbers(key):
            it = self.item(n)
            if it is not None and dedupe_key(it.text) == key \
                    and (best is None or key_rank(it) > key_rank(best)):
                best = it
        return default if best is None else best.n

    def __getitem__(self, key: str) -> int:
        n = self.get(key)
        if n is None:
            raise KeyError(key)
        return int(n)

    def __contains__(self, key: object) -> bool:
        return self.get(key) is not None

    def __iter__(self) -> Iterator[str]:
        return (k for k in self.index.recorded() if k in self)

    def __len__(self) -> int:
        return sum(1 for _ in self)


class Layered(Mapping[K, V]):
    """A mapping as changes over a shared base: a new one copies only the top layer, which is
    folded into a new base once it passes the square root of the base's size."""

    __slots__ = ("_base", "_len", "_top")

    def __init__(self, base: Mapping[K, V], top: dict[K, V] | None = None) -> None:
        self._base = base
        self._top = top or {}
        self._len = len(base) + sum(1 for k in self._top if k not in base)

    @classmethod
    def over(cls, held: Mapping[K, V], changes: Mapping[K, V]) -> Layered[K, V]:
        """``held`` with ``changes`` put over it."""
        if isinstance(held, Layered):
            base, top = held._base, {**held._top, **changes}
        else:
            base, top = held, dict(changes)
        if len(top) ** 2 > len(base) + 64:
            return cls({**base, **top})
        return cls(base, top)

    @classmethod
    def without(cls, held: Mapping[K, V], keep: Callable[[K], bool]) -> Layered[K, V]:
        """``held`` with only the keys ``keep`` accepts (a full copy: rare)."""
        return cls({k: v for k, v in held.items() if keep(k)})

    def __getitem__(self, key: K) -> V:
        top = self._top
        if key in top:
            return top[key]
        return self._base[key]

    def get(self, key: K, default: Any = None) -> Any:
        top = self._top
        if key in top:
            return top[key]
        return self._base.get(key, default)

    def __contains__(self, key: object) -> bool:
        return key in self._top or key in self._base

    def __len__(self) -> int:
        return self._len

    def __iter__(self) -> Iterator[K]:
        top = self._top
        return chain((k for k in self._base if k not in top), top)
