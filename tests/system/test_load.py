"""Load and overload on loopback, the short version of ``benchmarks/cases/load.py`` (same code).

10 s × 16 clients of mixed recall/search/remember/update/forget over 20 partitions, every
acknowledged write verified afterwards; then 128 clients hammering a server that serves 32 at
once: 429 with Retry-After, no 5xx, bounded memory, and recovery.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.load import run


@pytest.mark.slow
@pytest.mark.timeout(180)
def test_mixed_load_then_overload_no_5xx_no_lost_writes(tmp_path: Path) -> None:
    """Zero 5xx, zero lost writes, 429 + Retry-After under overload, bounded RSS, recovery."""
    f = run(tmp_path / "db", fake_model=True, seconds=10, clients=16, partitions=20,
            overload_seconds=3, overload_clients=128, recovery_seconds=2, max_concurrency=32,
            seed=3, log=tmp_path / "server.log")
    load, over, rec, rss = f["load"], f["overload"], f["recovery"], f["rss_mib"]
    assert f["ok"], f
    assert load["statuses"].get("200", 0) >= 100, load
    assert not any(s.startswith("5") for s in load["statuses"]), load
    assert load["writes"]["acknowledged_items"] > 0
    assert load["writes"] == {**load["writes"], "lost": 0, "changed": 0, "resurrected": 0,
                              "unexpected": 0}
    assert over["statuses"].get("429", 0) > over["statuses"].get("200", 0), over
    assert not any(s.startswith("5") for s in over["statuses"]), over
    assert over["retry_after_missing"] == 0
    assert rec["first_200_after_s"] is not None and rec["first_200_after_s"] < 2, rec
    assert set(rec["statuses"]) == {"200"}, rec
    # Refusals cost no memory: the overload adds little to what the load itself used.
    assert rss["peak_overload"] < rss["peak_load"] + 100, rss
