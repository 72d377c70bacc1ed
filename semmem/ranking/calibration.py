"""Ranking's cosine thresholds per model: derived from the model's own cosines, not retuned.

Every threshold that compares cosines (the relevance floor ``min_score``, the time cue's
``time_min_cosine``, the near-duplicate collapse ``dedupe_threshold``, the write hints'
``SIMILAR_THRESHOLD``, and the gap ``relative_floor``) was tuned on all-MiniLM-L6-v2, the
*reference* model. Another model spreads its cosines differently (multilingual-e5-small puts
unrelated texts near 0.75 where MiniLM puts them near 0), so each threshold is carried over by
where it sits in the reference's distribution: a piecewise-linear map through three anchors
measured on a fixed text set (``models/calibration-texts.json``: facts, restatements, questions,
in eight languages) with each model,

- *unrelated*: the median cosine between a text and the other rows' facts,
- *related*: the median cosine between a text and its own row's fact,
- *identical*: 1,

on two sides: ``query`` (a question to the facts: the floor and the time cue compare these)
and ``stored`` (a restatement to the facts: deduplication and write hints compare these).
Below the unrelated anchor the map continues the first segment's slope. The reference maps to
itself, so MiniLM's figures are today's constants exactly. ``semmem model calibrate`` measures
a model and records its anchors, the derived thresholds and the texts' hash in
``models/calibration.json`` (committed, beside the manifest).

A calibrated model also records its *query offset*: the mean of the rows' questions embedded as
queries less the mean of their facts embedded as passages. Centring removes the stored items'
common direction from the item and the query alike, but a model's questions sit at a common
point of their own (e5's ``query:`` prefix and the question form), and what is left of it adds
the same term to an item's score whatever the question: on LoCoMo dev, 30 % of the
question-dependent spread with e5 against 6.5 % with MiniLM. Ranking removes it as well
(``RankingConfig.query_offset``, scaled like the mean). The reference keeps none: its knobs
were tuned with its own offset in place.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Collection, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from semmem.embedding.files import manifest_root
from semmem.ranking.ranker import RankingConfig

REFERENCE_MODEL = "all-MiniLM-L6-v2"
CALIBRATION_NAME = "calibration.json"
TEXTS_NAME = "calibration-texts.json"
SIDES = ("query", "stored")
# The knobs each side's map carries over (relative_floor, a gap, is scaled by the query map).
QUERY_KNOBS = ("min_score", "time_min_cosine")
STORED_KNOBS = ("dedupe_threshold",)
_DECIMALS = 4


@dataclass(frozen=True)
class Calibration:
    """One model's maps from the reference's cosine scale to its own (identity: the reference,
    or a model nobody calibrated)."""

    name: str
    points: dict[str, tuple[tuple[float, float], ...]] = field(default_factory=dict)
    query_offset: tuple[float, ...] | None = None

    @property
    def identity(self) -> bool:
        """Whether ranking stays as tuned on the reference model."""
        return not self.points and self.query_offset is None

    def map(self, side: str, cosine: float) -> float:
        """A reference-scale cosine on this model's scale (``side``: query or stored)."""
        if self.identity:
            return cosine
        xs, ys = zip(*self.points[side], strict=True)
        if cosine < xs[0]:  # continue the first segment's slope
            slope = (ys[1] - ys[0]) / (xs[1] - xs[0])
            return round(float(ys[0] + (cosine - xs[0]) * slope), _DECIMALS)
        return round(float(np.interp(cosine, xs, ys)), _DECIMALS)

    def similar_threshold(self, reference: float) -> float:
        """The write hints' threshold (a fact-to-fact cosine) on this model's scale."""
        return self.map("stored", reference)

    def describe(self) -> str:
        """One line: the anchors of each side."""
        if self.identity:
            return "identity (the reference model)"
        out = "; ".join(f"{side} " + ", ".join(f"{x:.3f}→{y:.3f}" for x, y in pts[:-1])
                        for side, pts in self.points.items())
        if self.query_offset is not None:
            out += f"; query offset {offset_length(self.query_offset)}"
        return out


def offset_length(offset: Sequence[float]) -> str:
    """A query offset as its length (``|δ| 0.263``): what a line shows of its 384 numbers."""
    return f"|δ| {float(np.linalg.norm(np.asarray(offset, np.float64))):.3f}"


def calibrated(config: RankingConfig, calibration: Calibration,
               explicit: Collection[str] | None = None) -> RankingConfig:
    """``config`` with every cosine threshold it leaves at its default carried over to the
    model's scale and the model's query offset; thresholds set explicitly (``explicit``, by
    default the fields the config was given: ``SEMMEM_RANKING_*``) are taken as given, and
    switched-off ones (a floor of −1, a dedupe above 1) stay off."""
    if calibration.identity:
        return config
    given = config.model_fields_set if explicit is None else set(explicit)
    update: dict[str, Any] = {}
    if calibration.query_offset is not None and "query_offset" not in given:
        update["query_offset"] = calibration.query_offset
    for side, knobs in (("query", QUERY_KNOBS), ("stored", STORED_KNOBS)):
        for knob in knobs:
            value = getattr(config, knob)
            if knob in given or value <= -1 or value > 1:
                continue
            update[knob] = calibration.map(side, value)
    gap = config.relative_floor
    if gap is not None and "relative_floor" not in given:
        update["relative_floor"] = round(calibration.map("query", 1.0)
                                         - calibration.map("query", 1.0 - gap), _DECIMALS)
    return config.model_copy(update=update)


def load_calibration(folder: Path) -> Calibration:
    """The calibration of the model in ``folder`` from ``calibration.json`` beside the
    manifest: identity for the reference model and for a model the file does not list."""
    path = manifest_root(folder) / CALIBRATION_NAME
    if folder.name == REFERENCE_MODEL or not path.is_file():
        return Calibration(folder.name)
    entries: dict[str, Any] = json.loads(path.read_text())
    if folder.name not in entries or REFERENCE_MODEL not in entries:
        return Calibration(folder.name)
    ref, own = entries[REFERENCE_MODEL]["anchors"], entries[folder.name]["anchors"]
    points: dict[str, tuple[tuple[float, float], ...]] = {
        side: ((ref[side]["unrelated"], own[side]["unrelated"]),
               (ref[side]["related"], own[side]["related"]), (1.0, 1.0))
        for side in SIDES}
    offset = entries[folder.name].get("query_offset")
    return Calibration(folder.name, points,
                       tuple(float(x) for x in offset) if offset is not None else None)


def texts(root: Path) -> list[tuple[str, str, str]]:
    """The fixed calibration rows: (fact, restatement, question)."""
    rows = json.loads((root / TEXTS_NAME).read_text())["rows"]
    return [(str(a), str(b), str(c)) for a, b, c in rows]


def anchors(facts: np.ndarray, others: np.ndarray) -> dict[str, float]:
    """The unrelated and related anchors of one side: row ``i`` of ``others`` against every
    fact (medians over the other rows' facts, and over its own row's)."""
    cos = others.astype(np.float64) @ facts.astype(np.float64).T
    off = ~np.eye(len(cos), dtype=bool)
    return {"unrelated": round(float(np.median(cos[off])), 6),
            "related": round(float(np.median(np.diag(cos))), 6)}


def measure(root: Path, name: str, model_id: str, passages: Any, queries: Any) -> dict[str, Any]:
    """A model's calibration entry: its anchors on the fixed rows (``passages``/``queries``:
    its two embedding calls), the rows' hash, and the thresholds they give."""
    rows = texts(root)
    facts = passages([r[0] for r in rows])
    questions = queries([r[2] for r in rows])
    entry: dict[str, Any] = {
        "model_id": model_id,
        "texts_sha256": hashlib.sha256((root / TEXTS_NAME).read_bytes()).hexdigest(),
        "rows": len(rows),
        "anchors": {"query": anchors(facts, questions),
                    "stored": anchors(facts, passages([r[1] for r in rows]))},
    }
    if name != REFERENCE_MODEL:
        entry["query_offset"] = query_offset(facts, questions)
    return entry


def query_offset(facts: np.ndarray, questions: np.ndarray) -> list[float]:
    """The questions' mean (embedded as queries) less the facts' mean (as passages)."""
    delta = questions.astype(np.float64).mean(axis=0) - facts.astype(np.float64).mean(axis=0)
    return [round(float(x), 6) for x in delta]


def record(root: Path, name: str, entry: dict[str, Any]) -> dict[str, Any]:
    """Write ``entry`` into ``calibration.json`` with the thresholds it derives (beside the
    anchors, for review), and return it."""
    path = root / CALIBRATION_NAME
    entries: dict[str, Any] = json.loads(path.read_text()) if path.is_file() else {}
    entries[name] = entry
    path.write_text(json.dumps(entries, indent=1, ensure_ascii=False) + "\n")
    calibration = load_calibration(root / name)
    from semmem.ranking.similar import SIMILAR_THRESHOLD

    ranked = calibrated(RankingConfig(), calibration)
    entry["thresholds"] = {
        **{knob: getattr(ranked, knob) for knob in (*QUERY_KNOBS, *STORED_KNOBS)},
        "similar_threshold": calibration.similar_threshold(SIMILAR_THRESHOLD),
    }
    entries[name] = entry
    path.write_text(json.dumps(entries, indent=1, ensure_ascii=False) + "\n")
    return entry
