"""The store directory made by replicas starting side by side."""

from __future__ import annotations

import stat
import subprocess
import sys
from pathlib import Path

from tests.support.server import REPO

RACE = """
import os, sys, time
from semmem.store.modes import owner_only
go = sys.argv[2]
while not os.path.exists(go):
    pass
with owner_only("file://" + sys.argv[1]):
    pass
"""


def test_replicas_starting_at_once_on_a_new_directory_all_start(tmp_path: Path) -> None:
    """Six processes open one new store directory at the same moment, ten times: each one
    goes on (none fails on the directory another has just made), and it is made 0700."""
    for round_ in range(10):
        data = tmp_path / f"r{round_}" / "db"
        go = tmp_path / f"go{round_}"
        procs = [subprocess.Popen([sys.executable, "-c", RACE, str(data), str(go)], cwd=REPO,
                                  stderr=subprocess.PIPE, text=True) for _ in range(6)]
        go.touch()
        failures = [p.communicate(timeout=60)[1] for p in procs]
        assert [p.returncode for p in procs] == [0] * 6, [f for f in failures if f][:1]
        assert stat.S_IMODE(data.stat().st_mode) == 0o700
