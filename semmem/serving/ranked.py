"""What a ranking file changed: ``semmem serve --ranking FILE`` says it in a log line at start
and in ``/readyz`` (``ranking``), so a file that was loaded — or one that changes nothing, as
a tuning run that beat nothing writes — is visible without reading the file."""

from __future__ import annotations

from typing import Any

from semmem.ranking.calibration import calibrated, load_calibration
from semmem.ranking.config import RankingConfig
from semmem.settings import Settings


def ranking_changes(settings: Settings, config: RankingConfig) -> dict[str, Any]:
    """The knobs of ``config`` that differ from the defaults (on the model's scale, as they
    serve without a file); the model's query offset, a calibration, left out."""
    defaults = calibrated(RankingConfig(), load_calibration(settings.model)).model_dump()
    return {knob: value for knob, value in config.model_dump().items()
            if knob != "query_offset" and defaults.get(knob) != value}


def ranking_status(settings: Settings, config: RankingConfig) -> dict[str, Any]:
    """``/readyz``'s ``ranking``: the file (``None``: the defaults and ``SEMMEM_RANKING_*``)
    and what differs from the defaults."""
    file = None if settings.ranking is None else str(settings.ranking)
    return {"file": file, "changed": ranking_changes(settings, config)}


def ranking_line(status: dict[str, Any]) -> str:
    """The start's log line about the ranking."""
    changed = status["changed"]
    what = ", ".join(f"{k}={v}" for k, v in changed.items()) if changed else "nothing"
    if status["file"] is None:
        return f"ranking: no ranking file; changed from the defaults: {what}"
    return f"ranking: file {status['file']} loaded; changed from the defaults: {what}"
