"""Similar facts: the nearest recallable ones to a text, and owners' groups over a partition."""

from __future__ import annotations

import asyncio

import numpy as np
import pytest

from semmem.items import Item
from semmem.ranking.similar import Rows, cutoff, groups, nearest, standing_out
from semmem.store.views import ItemSet


def _set(vectors: list[list[float]], hidden: frozenset[int] = frozenset()) -> ItemSet:
    rows = np.array(vectors, np.float32)
    rows /= np.linalg.norm(rows, axis=1, keepdims=True)
    items = [Item(n=i + 1, text=f"fact {i + 1}", ts=i, updated=i, revision=1, seq=1, model="m",
                  attrs={"status": "inactive"} if i + 1 in hidden else {})
             for i in range(len(rows))]
    return ItemSet(items, rows)


def test_nearest_lists_the_best_first_above_the_threshold() -> None:
    items = _set([[1, 0, 0], [0.9, 0.1, 0], [0, 1, 0], [0.7, 0.7, 0]])
    found = nearest(items, np.array([1, 0, 0], np.float32), 0.5)
    assert [near.item.n for near in found] == [1, 2, 4]
    assert found[0].score > found[1].score > found[2].score >= 0.5


def test_nearest_leaves_out_hidden_and_excluded_facts_and_stops_at_the_limit() -> None:
    items = _set([[1, 0], [1, 0.1], [1, 0.2], [1, 0.3], [1, 0.4]], hidden=frozenset({2}))
    found = nearest(items, np.array([1, 0], np.float32), 0.1, exclude={1}, limit=2)
    assert [near.item.n for near in found] == [3, 4]
    assert nearest(_set([[1, 0]]), np.array([0, 1], np.float32), 0.5) == []


def test_cutoff_is_the_threshold_until_the_memory_has_a_spread() -> None:
    few = np.array([0.9, 0.5, 0.45, 0.44, 0.43, 0.42, 0.41], np.float32)  # 4 beside the best 3
    assert cutoff(few, 0.4) == 0.4
    diverse = np.concatenate([[0.9, 0.6], np.linspace(-0.1, 0.2, 500)]).astype(np.float32)
    assert cutoff(diverse, 0.4) == 0.4  # short facts on many topics: the threshold decides


def test_cutoff_rises_above_a_dense_memory() -> None:
    # Long facts about one person: every one is 0.35-0.55 similar to the new text.
    dense = np.concatenate([[0.85, 0.58], np.linspace(0.35, 0.55, 300)]).astype(np.float32)
    least = cutoff(dense, 0.4)
    assert 0.58 < least < 0.85  # the restatement stands out, the crowd does not
    items = _set([[1, 0]] * len(dense))
    row = ItemSet(items.items, np.stack([dense, np.sqrt(1 - dense**2)], axis=1))
    near, used = standing_out(row, np.array([1, 0], np.float32), 0.4)
    assert used == least and [n.item.n for n in near] == [1]


def test_groups_link_each_fact_to_its_best_match() -> None:
    # 1 and 2 say the same thing (0.94); 4, the newest, is nearer 1 (0.5) than 2 (< 0.4): it
    # joins 1 and 2 rather than taking 1 away from 2 (3 and 5 have no match).
    two = [0.94, np.sqrt(1 - 0.94**2), 0, 0, 0]
    items = _set([[1, 0, 0, 0, 0], two, [0, 0, 1, 0, 0], [0.5, -0.3, 0, 0, 0.81],
                  [0, 0, 0, 1, 0]])
    found = groups(items, 0.4)
    assert [[(m.item.n, m.to) for m in g.members] for g in found] == [[(4, 1), (2, 1), (1, 2)]]
    assert found[0].members[1].score == pytest.approx(0.94, abs=1e-3)
    assert found[0].members[0].score == pytest.approx(0.5, abs=1e-3)


def test_groups_come_closest_pair_first() -> None:
    items = _set([[1, 0, 0], [0.8, 0.6, 0], [0, 0, 1], [0, 0.05, 1], [0, 1, 0]])
    found = groups(items, 0.75)
    assert [[m.item.n for m in g.members] for g in found] == [[4, 3], [2, 1]]
    assert found[0].strongest > found[1].strongest >= 0.75


def test_groups_of_many_facts_find_every_planted_pair() -> None:
    rng = np.random.default_rng(7)
    base = rng.normal(size=(3000, 64)).astype(np.float32)
    planted = {10: 2500, 400: 1200, 2999: 7}
    for a, b in planted.items():
        base[b] = base[a] + 0.05 * rng.normal(size=64)
    found = groups(_set(base.tolist()), 0.9)
    pairs = {frozenset(near.item.n - 1 for near in g.members) for g in found}
    assert pairs == {frozenset(p) for p in planted.items()}


async def test_rows_asked_together_are_each_texts_own_row_and_one_product() -> None:
    """Texts asking in one turn of the loop get their own cosines (as one product per text
    gives them) from one product over the set; a text asking alone, or later, gets its own."""
    rng = np.random.default_rng(5)
    items = _set(rng.normal(size=(300, 16)).tolist())
    asked = rng.normal(size=(6, 16)).astype(np.float32)
    rows = Rows()
    together = await asyncio.gather(*(rows.of(items, v) for v in asked))
    assert rows.products == 1
    for v, row in zip(asked, together, strict=True):
        assert np.allclose(row, items.vectors @ v, atol=1e-5)
        (got, least), (want, least_alone) = (standing_out(items, v, 0.1, scores=row),
                                             standing_out(items, v, 0.1))
        assert [x.item.n for x in got] == [x.item.n for x in want]
        assert least == pytest.approx(least_alone, abs=1e-5)
    alone = await rows.of(items, asked[0])
    assert rows.products == 2 and np.array_equal(alone, items.vectors @ asked[0])
    other = _set(rng.normal(size=(40, 16)).tolist())  # another set in the same turn: its own
    a, b = await asyncio.gather(rows.of(items, asked[1]), rows.of(other, asked[1]))
    assert a.shape == (300,) and b.shape == (40,) and rows.products == 4
