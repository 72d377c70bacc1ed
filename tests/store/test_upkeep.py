"""Lance's own log lines (Rust, straight to stderr) stay quiet where semmem handles the case
itself: a compaction that loses its commit to a concurrent write."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

from tests.support.server import REPO

RACE = textwrap.dedent("""
    import sys
    from datetime import timedelta
    from semmem.store import quiet_engine_logs
    quiet_engine_logs()  # as the entry points do at start-up
    import lance, pyarrow as pa
    from lance.optimize import Compaction

    uri = sys.argv[1]
    lance.write_dataset(pa.table({"k": [1, 2, 3]}), uri)
    lance.write_dataset(pa.table({"k": [4]}), uri, mode="append")
    ds = lance.dataset(uri)
    plan = Compaction.plan(ds, {"materialize_deletions": True})
    rewrites = [task.execute(ds) for task in plan.tasks]
    lance.dataset(uri).update({"k": "k + 10"}, where="k = 1")  # a write wins the race
    try:
        Compaction.commit(ds, rewrites)
    except OSError:
        print("lost the race")
""")


def test_a_compaction_losing_its_race_logs_no_engine_warning(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("LANCE_LOG", "LANCEDB_LOG"))}
    env["PYTHONPATH"] = str(REPO)
    done = subprocess.run([sys.executable, "-c", RACE, str(tmp_path / "t.lance")], env=env,
                          capture_output=True, text=True, timeout=120)
    assert done.stdout.strip() == "lost the race", done.stderr
    assert "WARN" not in done.stderr, done.stderr
