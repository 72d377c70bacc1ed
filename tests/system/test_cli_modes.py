"""Every ``semmem`` command writes files for their owner only, whatever the caller's umask:
the entry point sets umask 077 (docs/security.md). Real processes under umask 022."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from pathlib import Path

from tests.support.files import decoded_with
from tests.support.server import REPO

SECRET = "The door PIN is 4921 and only alice knows it"


def _semmem(*args: str, stdin: str | None = None) -> str:
    """``python -m semmem.cli ARGS`` under umask 022 (the usual shell's); its stdout."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("SEMMEM_")}
    done = subprocess.run([sys.executable, "-m", "semmem.cli", *args], cwd=REPO, env=env,
                          input=stdin, capture_output=True, text=True, timeout=300, umask=0o022)
    assert done.returncode == 0, done.stderr
    return done.stdout


def _open_to_others(*roots: Path) -> list[tuple[str, str]]:
    """Every path under ``roots`` (and each root) that its group or others may read."""
    paths = [p for root in roots for p in (root, *root.rglob("*"))]
    return [(str(p), oct(stat.S_IMODE(p.lstat().st_mode))) for p in paths
            if stat.S_IMODE(p.lstat().st_mode) & 0o077]


def test_backup_restore_and_export_write_private_files_under_umask_022(tmp_path: Path) -> None:
    """``backup create``, ``backup restore`` and ``export -o`` used to leave 0755/0644 files
    under umask 022 (the backup's objects and the restored store hold the fact in clear)."""
    live, target, restored = tmp_path / "live", tmp_path / "backups", tmp_path / "restored"
    out = tmp_path / "alice.jsonl"
    _semmem("import", "-p", "alice", "-", "--data", str(live),
            stdin=json.dumps({"text": SECRET}) + "\n")
    created = json.loads(_semmem("backup", "create", "--to", str(target), "--data",
                                 str(live)).splitlines()[-1])
    _semmem("backup", "restore", created["id"], "--at", str(target), "--into", str(restored))
    _semmem("export", "-p", "alice", "-o", str(out), "--data", str(restored))
    # positive control: each place holds the fact the modes protect
    assert decoded_with(target, SECRET) and decoded_with(restored, SECRET)
    assert SECRET in out.read_text()
    assert _open_to_others(target, restored, out, live) == []


def test_a_setting_out_of_bounds_is_named_without_a_traceback(tmp_path: Path) -> None:
    """``SEMMEM_DATA=`` (empty) made LanceDB put the store at the file system's root; now it
    is refused at start, as any setting out of its bounds, by name and with no traceback."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("SEMMEM_")}
    done = subprocess.run([sys.executable, "-m", "semmem.cli", "serve"], cwd=tmp_path,
                          env={**env, "SEMMEM_DATA": ""}, capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 2
    assert "error: SEMMEM_DATA: String should have at least 1 character" in done.stderr
    assert "Traceback" not in done.stderr + done.stdout
    assert list(tmp_path.iterdir()) == []  # no store, no token file
