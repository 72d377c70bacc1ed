"""Results fitted to the contract's 64 KiB response limit, as data.

A surface serialises the fitted result once, at its edge. Sizes are worked out from each
line's and each item's own JSON size (compact JSON escapes every character on its own, so the
whole body's size is the sum of its parts), not by serialising candidate bodies.
"""

from __future__ import annotations

from itertools import accumulate
from typing import Any

from semmem.contract import MAX_ID_BYTES, MAX_RESPONSE, MAX_SOURCES
from semmem.errors import SemmemError
from semmem.protocol.jsonio import dumps
from semmem.results import Recall


def fit_recall(recall: Recall, limit: int = MAX_RESPONSE) -> Recall:
    """The recall whose response body fits in ``limit``: the least relevant lines dropped.

    Only pathological texts (heavy JSON escaping) lose lines: a ``maxBytes`` of text normally
    serialises far below 64 KiB.

    Raises:
        SemmemError: lines and sources disagree, or a source id or the cursor is over 1,024
            bytes (the contract's limits; semmem never makes such ones).
    """
    if len(recall.lines) != len(recall.sources):
        raise SemmemError("recall text and sources disagree")
    if any(len(s["id"].encode("utf-8")) > MAX_ID_BYTES for s in recall.sources):
        raise SemmemError("a source id is over 1,024 bytes")
    if len(recall.cursor.encode("utf-8")) > MAX_ID_BYTES:
        raise SemmemError("the cursor is over 1,024 bytes")
    base = len(dumps(recall.head(0).wire()))
    # A line costs its escaped text, its source and, after the first, "\n" (2) and "," (1).
    costs = [len(dumps(line)) - 2 + len(dumps(source)) + (3 if i else 0)
             for i, (line, source) in enumerate(zip(recall.lines, recall.sources, strict=True))]
    sizes = accumulate(costs[:MAX_SOURCES], initial=base)
    keep = sum(1 for size in sizes if size <= limit) - 1
    return recall if keep == len(recall.lines) else recall.head(max(keep, 0))


def fit_search(result: dict[str, Any], limit: int = MAX_RESPONSE) -> dict[str, Any]:
    """A search result whose ``{"result": …}`` body fits in ``limit``, keeping the best items.

    When items are cut, ``"truncated": true`` tells the model there were more.
    """
    items: list[dict[str, Any]] = list(result["items"])
    costs = [len(dumps(item)) + (1 if i else 0) for i, item in enumerate(items)]
    if len(dumps({"result": {**result, "items": []}})) + sum(costs) <= limit:
        return result
    cut = {**result, "items": [], "truncated": True}
    size = len(dumps({"result": cut}))
    kept = 0
    for cost in costs:  # the first item kept is the first item: no comma before it
        if size + cost > limit:
            break
        size += cost
        kept += 1
    return {**cut, "items": items[:kept]}
