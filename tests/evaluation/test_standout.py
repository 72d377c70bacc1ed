"""The listing rules' measurements: pairs listed in a memory, hints per remember, the choice."""

from __future__ import annotations

import numpy as np

from semmem.evaluation.similar import Pair
from semmem.evaluation.standout import (
    Point,
    Spread,
    choose,
    hints_per_remember,
    memories,
    rest_z,
    shares,
    threshold_only,
)


def _embed(texts: list[str]) -> np.ndarray:
    """Unit vectors: the angle is the text's first number, so two texts' cosine is known."""
    angles = np.radians([float(t.split()[0]) for t in texts])
    return np.stack([np.cos(angles), np.sin(angles)], axis=1).astype(np.float32)


def test_a_pair_counts_as_listed_only_when_its_own_fact_is_among_the_best() -> None:
    pairs = [Pair("a", "restatement", "0 a", "10 a again", "tune"),
             Pair("b", "unrelated", "90 b", "60 b other", "tune"),
             Pair("c", "related", "35 c", "5 c near a", "held_out")]
    mems = memories(pairs, _embed)
    got = shares(mems, threshold_only(0.8))
    # cos 10° = 0.98 lists a; cos 30° = 0.87 lists b; "5 c" lists 0 a and 35 c (cos 30°) both.
    assert got == {("tune", "restatement"): 100.0, ("tune", "unrelated"): 100.0,
                   ("held_out", "related"): 100.0}
    assert shares(mems, threshold_only(0.9))[("tune", "unrelated")] == 0.0


def test_hints_per_remember_counts_each_write_against_the_earlier_ones() -> None:
    texts = ["0 a", "1 b", "2 c", "0 A", "90 d"]  # "0 A" is an exact duplicate: no hints
    assert hints_per_remember(texts, _embed(texts), threshold_only(0.9)) == (0 + 1 + 2 + 0 + 0) / 5


def test_rest_z_quiets_a_crowd_but_not_a_fact_that_stands_out() -> None:
    crowd = [f"{40 + i * 0.2:.1f} x" for i in range(50)]  # all within 10° of each other
    texts = [*crowd, "45 y"]
    assert hints_per_remember(texts, _embed(texts), threshold_only(0.4)) > 2.5
    assert hints_per_remember(texts, _embed(texts), rest_z(2.75)) < 0.5


def test_spread_sums_the_pairwise_cosines() -> None:
    spread = Spread().add(np.array([0.2, 0.4], np.float32)).add(np.array([0.6], np.float32))
    mean, std = spread.mean_std()
    assert spread.pairs == 3 and abs(mean - 0.4) < 1e-6
    assert abs(std - np.std([0.2, 0.4, 0.6])) < 1e-6


def _point(p: float, superseded: float, hints: float) -> Point:
    shares_ = {(s, k): v for s in ("tune", "held_out") for k, v in
               (("restatement", 100.0), ("supersession", superseded), ("related", 30.0),
                ("unrelated", 0.0))}
    return Point(p, {"short": shares_}, {"26": hints})


def test_choose_takes_the_middle_of_the_points_meeting_every_tune_target() -> None:
    points = [_point(1, 95, 2.0), _point(2, 92, 0.8), _point(3, 90, 0.5), _point(4, 86, 0.3),
              _point(5, 80, 0.1)]
    assert choose(points, ["26"]).parameter == 3
    assert choose(points[:1] + points[4:], ["26"]).parameter == 5  # closest: least shortfall
