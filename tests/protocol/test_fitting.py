"""Results fitted to the response limit as data: the fitted body fits, keeps the most relevant
lines or items, and drops no more than it must."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from semmem.errors import SemmemError
from semmem.protocol.fitting import fit_recall, fit_search
from semmem.protocol.jsonio import dumps
from semmem.results import Recall

# Lines that JSON escapes heavily (controls, quotes, backslashes) or not at all.
LINE = st.text(alphabet=st.sampled_from('ab é"\\\x01\x1f€😀'), min_size=1, max_size=60)


def _recall(lines: list[str]) -> Recall:
    sources = [{"id": str(i + 1), "title": line[:80], "revision": "1",
                "updatedAt": "2026-12-01T00:00:00.000Z"} for i, line in enumerate(lines)]
    return Recall(lines, sources, "c1.abc", [])


def _size(recall: Recall) -> int:
    return len(dumps(recall.wire()))


@settings(max_examples=200, deadline=None)
@given(lines=st.lists(LINE, max_size=120), limit=st.integers(60, 4000))
def test_a_fitted_recall_keeps_the_longest_prefix_that_fits(lines: list[str], limit: int) -> None:
    whole = _recall(lines)
    fitted = fit_recall(whole, limit)
    keep = len(fitted.lines)
    assert fitted.lines == lines[:keep] and fitted.sources == whole.sources[:keep]
    assert keep <= 100  # the contract's sources per response
    if keep:
        assert _size(fitted) <= limit
    if keep < min(len(lines), 100):
        assert _size(whole.head(keep + 1)) > limit


def test_a_recall_that_fits_is_returned_as_it_is() -> None:
    whole = _recall(["1. Prefers metric units", "2. Lives in Lyon"])
    assert fit_recall(whole) is whole


def test_a_recall_whose_lines_and_sources_disagree_is_an_error() -> None:
    broken = Recall(["1. a", "2. b"], _recall(["1. a"]).sources, "c1.abc", [])
    with pytest.raises(SemmemError):
        fit_recall(broken)


def _search(items: list[str]) -> dict[str, Any]:
    return {"items": [{"n": i + 1, "text": t, "score": 0.5, "updatedAt": "2026-12-01T00:00:00Z"}
                      for i, t in enumerate(items)], "count": len(items)}


@settings(max_examples=200, deadline=None)
@given(items=st.lists(LINE, max_size=60), limit=st.integers(80, 4000))
def test_a_fitted_search_keeps_the_best_items_that_fit(items: list[str], limit: int) -> None:
    result = _search(items)
    fitted = fit_search(result, limit)
    body = len(dumps({"result": fitted}))
    if fitted is result:
        assert body <= limit
        return
    kept = fitted["items"]
    assert fitted["truncated"] is True and kept == result["items"][:len(kept)]
    assert body <= limit
    more = {**fitted, "items": result["items"][:len(kept) + 1]}
    assert len(dumps({"result": more})) > limit
