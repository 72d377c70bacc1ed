"""RankingConfig: every knob of ranking, a ``SEMMEM_RANKING_*`` setting or a key of a JSON
ranking file (``--ranking FILE``); ``docs/ranking.md`` says what each does and the figures that
chose the defaults (the formula they enter: ``semmem.ranking.ranker``)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Literal

from pydantic import Field
from pydantic_settings import BaseSettings, SettingsConfigDict

# P(relevant) of a candidate: ``evaluation.tuning.fit_relevance`` on LoCoMo dev (all five
# conversations, the other defaults).
RELEVANCE_MODEL = (-3.2714, 2.5385, -2.625, 0.3867, 0.3589, -0.448)


class RankingConfig(BaseSettings):
    """Ranking knobs (env ``SEMMEM_RANKING_<NAME>``); the defaults are tuned on LoCoMo dev."""

    model_config = SettingsConfigDict(env_prefix="SEMMEM_RANKING_", extra="forbid")

    semantic_weight: float = Field(1.0, ge=0, description="weight of the (centred) cosine")
    lexical_weight: float = Field(
        0.4, ge=0, description="weight of BM25, normalised by the best-matching item's score"
    )
    centering: float = Field(
        1.0, ge=0, le=1,
        description="share of the partition's mean vector removed before the cosine (0 = off)",
    )
    centering_items: float = Field(
        10.0, ge=0,
        description="shrinks centring in small partitions: the mean counts n / (n + this)",
    )
    query_offset: tuple[float, ...] | None = Field(
        None,
        description="the model's query offset, removed from the query with the mean when "
                    "centring (set from the model's calibration; none for the reference model)",
    )
    stemming: bool = Field(True, description="light suffix stemming of lexical tokens")
    bm25_k1: float = Field(1.2, gt=0, description="BM25 term-frequency saturation")
    bm25_b: float = Field(0.75, ge=0, le=1, description="BM25 length normalisation")
    recency_weight: float = Field(
        0.0, ge=0, description="weight of recency (0.5 per half-life before the newest item)"
    )
    recency_half_life_days: float = Field(30.0, gt=0, description="half-life of recency")
    min_score: float = Field(
        0.1, ge=-1, le=1,
        description="relevance floor: items whose plain cosine to the input is below it are "
                    "never recalled",
    )
    relative_floor: float | None = Field(
        None, gt=0,
        description="also leave out items whose cosine is more than this below the best one's",
    )
    dedupe_threshold: float = Field(
        0.95, gt=0, le=1.01,
        description="skip items at least this similar to one already chosen (> 1 = off)",
    )
    candidates: int = Field(400, ge=1, description="how many top items packing looks at")
    time_weight: float = Field(
        0.2, ge=0,
        description="added to items that mention a time when the input asks when (English cues)",
    )
    time_min_cosine: float = Field(
        0.4, ge=-1, le=1, description="the cosine an item needs for time_weight to apply"
    )
    assistant_weight: float = Field(
        0.5, ge=0,
        description="taken from a conversation piece the assistant said, unless the input asks "
                    "what the assistant said (English cues)",
    )
    session_weight: float = Field(
        0.0, ge=0,
        description="added to a piece in proportion to how much of its session matches the "
                    "input (relative to the best session)",
    )
    session_min_cosine: float = Field(
        0.3, ge=-1, le=1,
        description="the cosine a piece needs to count for its session or message, and to be "
                    "lifted by them",
    )
    message_weight: float = Field(
        0.0, ge=0,
        description="added to a piece in proportion to how much of its message matches the "
                    "input (relative to the best message)",
    )
    message_share: float = Field(
        0.8, ge=0, le=1,
        description="share of the gap to the best-scoring piece of the same message added to "
                    "a piece (1 = every piece of a message scores as its best one)",
    )
    session_spread: float = Field(
        0.2, ge=0,
        description="when the input asks for several things (how many, how much, total; "
                    "English cues), taken from a piece's score per message already chosen from "
                    "its session, for the first spread_lines lines",
    )
    spread_lines: int = Field(
        3, ge=0, le=100, description="how many of the first lines session_spread reorders"
    )
    window_weight: float = Field(
        0.3, ge=0,
        description="added to a conversation piece said inside the time the input names "
        "relative to now ('two weeks ago', 'last Saturday', 'last month', 'in February'; "
        "English cues)",
    )
    span_first: bool = Field(
        True,
        description="when the input names a time and nothing else ('what did I say in "
        "October?', 'what did we talk about six weeks ago?'; English cues), what was said "
        "in that time comes first, below the floor or not; the rest follows",
    )
    recent_weight: float = Field(
        0.0, ge=0,
        description="weight of a piece's recency (relative to the newest piece) when the input "
                    "asks about the present or the recent past (English cues)",
    )
    recent_half_life_days: float = Field(
        30.0, gt=0, description="half-life of that recency"
    )
    packing: Literal["rank", "expected"] = Field(
        "rank",
        description="rank: whole lines in rank order while they fit; expected: among the first "
                    "pack_choose_among lines, the set with the most expected relevant facts",
    )
    pack_choose_among: int = Field(
        10, ge=1, le=100, description="how many of the best lines expected packing chooses among"
    )
    relevance_model: tuple[float, float, float, float, float, float] = Field(
        RELEVANCE_MODEL,
        description="logistic coefficients of P(relevant): intercept, score, gap to the best "
                    "score, cosine, lexical, log rank (fitted on labelled data by the notebook)",
    )

    @classmethod
    def from_file(cls, path: Path) -> RankingConfig:
        """Load a JSON ranking file (as written by the tuning notebook).

        The file is the whole configuration: knobs it leaves out take their defaults, and
        ``SEMMEM_RANKING_*`` variables do not apply.

        Raises:
            ValueError: not a JSON object, an unknown knob or a value out of range.
        """
        data = json.loads(path.read_text())
        if not isinstance(data, dict):
            raise ValueError(f"{path}: a ranking file is a JSON object of knobs")
        defaults = {name: field.get_default(call_default_factory=True)
                    for name, field in cls.model_fields.items()}
        # Every knob passed explicitly: init arguments take precedence over the environment.
        return cls(**{**defaults, **data})

    def to_file(self, path: Path) -> None:
        """Write the knobs as JSON."""
        path.write_text(json.dumps(self.model_dump(), indent=2) + "\n")

    @classmethod
    def defaults(cls) -> RankingConfig:
        """The tuned defaults, whatever ``SEMMEM_RANKING_*`` says (validation reads no
        environment; constructing does)."""
        return cls.model_validate({})

    @classmethod
    def plain_cosine(cls) -> RankingConfig:
        """The reference: cosine similarity only; no floor, no deduplication."""
        return cls.model_validate({
            "lexical_weight": 0.0, "centering": 0.0, "recency_weight": 0.0, "min_score": -1.0,
            "relative_floor": None, "dedupe_threshold": 1.01, "candidates": 1_000_000,
            "time_weight": 0.0, "assistant_weight": 0.0, "session_weight": 0.0,
            "message_weight": 0.0, "message_share": 0.0, "recent_weight": 0.0,
            "session_spread": 0.0, "window_weight": 0.0, "span_first": False,
        })
