"""A data folder semmem cannot keep a store in gets one line saying what semmem needs of it and
what to do, a non-zero exit and no traceback (issue 62, item 5): before, a folder without
permission answered `[Errno 13] Permission denied: '…/generated-token'` (with tokens set), an
unwritable 0755 folder got "chmod 700" advice its user cannot follow and then `Permission
denied: '…/_tmp'`, and `--data README.md` got `[Errno 17] File exists`.

The permission cases run the real command as ``nobody`` (``setpriv``): root reads and writes
any folder whatever its mode, so as root they could not show anything."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.server import REPO, TOKEN, free_port

NOBODY = 65534
SETPRIV = shutil.which("setpriv")
as_nobody = pytest.mark.skipif(os.geteuid() == 0 and SETPRIV is None,
                               reason="root passes every permission check, and no setpriv")


@pytest.fixture
def base() -> Iterator[Path]:
    """A folder ``nobody`` may enter (pytest's own tmp_path is root's alone)."""
    folder = Path(tempfile.mkdtemp(prefix="semmem-data-folder-"))
    folder.chmod(0o755)
    yield folder
    shutil.rmtree(folder)


def _semmem(*args: str, data: Path, nobody: bool = False) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("SEMMEM_")}
    env |= {"PYTHONPATH": str(REPO), "SEMMEM_DATA": str(data), "SEMMEM_TOKENS": TOKEN,
            "SEMMEM_PORT": str(free_port()), "PYTHONDONTWRITEBYTECODE": "1"}
    prefix: list[str] = []
    if nobody and os.geteuid() == 0:
        assert SETPRIV is not None
        prefix = [SETPRIV, f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups"]
    return subprocess.run([*prefix, sys.executable, "-m", "semmem.cli", *args], cwd=REPO,
                          env=env, capture_output=True, text=True, timeout=120)


def _one_line(done: subprocess.CompletedProcess[str], start: str) -> str:
    assert done.returncode == 1, done.stderr
    assert done.stderr.count("\n") == 1 and done.stderr.startswith(start), done.stderr
    assert "Errno" not in done.stderr and "chmod 700" not in done.stderr
    assert "Traceback" not in done.stderr
    return done.stderr


@as_nobody
@pytest.mark.parametrize("mode", [0o700, 0o755])
@pytest.mark.parametrize("command", [["serve"], ["remember", "x", "-p", "a"], ["mcp"]])
def test_a_folder_of_another_user_is_refused_in_one_line(base: Path, mode: int,
                                                         command: list[str]) -> None:
    data = base / "theirs"
    data.mkdir()
    (data / "generated-token").write_text("left by an earlier start\n")
    data.chmod(mode)  # root's: 0700 shut to nobody; 0755 readable, not writable
    line = _one_line(_semmem(*command, data=data, nobody=True),
                     f"error: the data folder {data} is not open to this user (nobody, uid "
                     f"{NOBODY}; it is owned by root, uid 0): semmem reads, writes and creates "
                     f"files in it;")
    assert "SEMMEM_DATA (or --data)" in line and "`chown`" in line


@as_nobody
def test_a_new_folder_under_one_it_cannot_write_is_refused_in_one_line(base: Path) -> None:
    data = base / "new" / "store"
    _one_line(_semmem("remember", "x", "-p", "a", data=data, nobody=True),
              f"error: cannot make the data folder {data}: {base} is not writable by this user")
    assert not data.parent.exists()


@pytest.mark.parametrize("command", [["serve"], ["remember", "x", "-p", "a"]])
def test_a_file_given_as_the_data_folder_is_refused_in_one_line(tmp_path: Path,
                                                                command: list[str]) -> None:
    readme = tmp_path / "README.md"
    readme.write_text("# not a store\n")
    _one_line(_semmem(*command, data=readme),
              f"error: the data folder {readme} is a file, not a folder: semmem keeps its "
              f"store in a folder of its own; set SEMMEM_DATA (or --data) to a folder")
    assert readme.read_text() == "# not a store\n"
