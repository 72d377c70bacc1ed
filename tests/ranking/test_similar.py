"""Similar facts: the nearest recallable ones to a text, and owners' groups over a partition."""

from __future__ import annotations

import numpy as np

from semmem.items import Item
from semmem.ranking.similar import groups, nearest
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


def test_groups_are_stars_around_the_newest_fact() -> None:
    # 1 ~ 2 ~ 3 is a chain: 3 (the newest) takes 2, and 1 is too far from 3 to join it.
    items = _set([[1, 0, 0], [0.8, 0.6, 0], [0.3, 1, 0], [0, 0, 1], [0, 0.05, 1]])
    found = groups(items, 0.75)
    assert [[near.item.n for near in g.members] for g in found] == [[5, 4], [3, 2]]
    assert found[0].members[0].score == 1.0 and 0.75 <= found[0].members[1].score < 1


def test_groups_of_many_facts_find_every_planted_pair() -> None:
    rng = np.random.default_rng(7)
    base = rng.normal(size=(3000, 64)).astype(np.float32)
    planted = {10: 2500, 400: 1200, 2999: 7}
    for a, b in planted.items():
        base[b] = base[a] + 0.05 * rng.normal(size=64)
    found = groups(_set(base.tolist()), 0.9)
    pairs = {frozenset(near.item.n - 1 for near in g.members) for g in found}
    assert pairs == {frozenset(p) for p in planted.items()}
