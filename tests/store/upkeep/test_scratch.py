"""The engine's spill files go to a private folder per process, emptied of dead ones at start."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from pathlib import Path

from tests.support.server import REPO

SHOW = (
    "import json, os, sys, tempfile; from semmem.store.upkeep.scratch import private_temp\n"
    "with private_temp(sys.argv[1]) as mine:\n"
    "    seen = {'mine': str(mine), 'tmpdir': os.environ['TMPDIR'],\n"
    "            'gettempdir': tempfile.gettempdir(), 'mode': oct(mine.stat().st_mode & 0o777)}\n"
    "seen['after'] = os.environ.get('TMPDIR'); seen['left'] = os.path.exists(seen['mine'])\n"
    "print(json.dumps(seen))"
)


def test_a_process_gets_its_own_temp_folder_and_dead_ones_are_removed(tmp_path: Path) -> None:
    store = tmp_path / "db"
    dead = store / "_tmp" / f"{socket.gethostname()}-{2 ** 22 + 12345}"  # no such pid
    dead.mkdir(parents=True)
    (dead / "spill-0.lance").write_bytes(b"raw vectors of a killed index build")
    other_host = store / "_tmp" / "elsewhere-1"
    other_host.mkdir()
    done = subprocess.run([sys.executable, "-c", SHOW, str(store)], cwd=REPO, check=True,
                          capture_output=True, text=True, timeout=60,
                          env={**os.environ, "PYTHONPATH": str(REPO)})
    shown = json.loads(done.stdout)
    assert shown["tmpdir"] == shown["mine"] == shown["gettempdir"]
    assert Path(shown["mine"]).parent == store / "_tmp" and shown["mode"] == "0o700"
    assert not dead.exists()  # a dead process's leftovers, with their vectors, are gone
    assert other_host.exists()  # another host's process may still be using its folder
    assert shown["after"] == os.environ.get("TMPDIR") and not shown["left"]  # put back


def test_a_remote_store_uses_the_runtime_directory(tmp_path: Path) -> None:
    done = subprocess.run([sys.executable, "-c", SHOW, "s3://bucket/prefix"], cwd=REPO,
                          check=True, capture_output=True, text=True, timeout=60,
                          env={**os.environ, "PYTHONPATH": str(REPO),
                               "XDG_RUNTIME_DIR": str(tmp_path)})
    mine = Path(json.loads(done.stdout)["mine"])
    assert mine.parent.parent == tmp_path / "semmem"
