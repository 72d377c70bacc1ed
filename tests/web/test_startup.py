"""What `semmem serve` checks and sets up before it serves: token lengths, where a generated
token goes, the tokens file's mode, a symlinked default data directory, private store files."""

from __future__ import annotations

import io
import logging
import os
import pty
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from semmem.settings import Settings
from semmem.store.modes import owner_only
from semmem.web.server import GENERATED_TOKEN_FILE, prepare
from tests.support.server import REPO, TOKEN, ServerProcess
from tests.support.web import remember


def _serve(cwd: Path, **env: str) -> subprocess.CompletedProcess[str]:
    """`semmem serve` (this clone's code) in ``cwd``, expected to refuse to start."""
    clean = {k: v for k, v in os.environ.items() if not k.startswith("SEMMEM_")}
    clean.update({"PYTHONPATH": str(REPO), "SEMMEM_PORT": "1", **env})
    return subprocess.run([sys.executable, "-m", "semmem.cli", "serve"], cwd=cwd, env=clean,
                          capture_output=True, text=True, timeout=120)


def test_serve_refuses_a_short_token_without_echoing_it(tmp_path: Path) -> None:
    tokens = tmp_path / "tokens"
    tokens.write_text("# fine\n" + "x" * 32 + "\nshort-pw-x\n")
    tokens.chmod(0o600)
    for env, where in (({"SEMMEM_TOKENS": "y" * 20 + ",tiny-pw-x"}, "item 2 of SEMMEM_TOKENS"),
                       ({"SEMMEM_TOKENS_FILE": str(tokens)}, f"line 3 of {tokens}"),
                       ({"SEMMEM_TOKENS": "z" * 16, "SEMMEM_ADMIN_TOKENS": "adm-pw-x"},
                        "item 1 of SEMMEM_ADMIN_TOKENS")):
        done = _serve(tmp_path, SEMMEM_DATA=str(tmp_path / "db"), **env)
        assert done.returncode == 1, done.stderr
        assert f"error: the token at {where} is shorter than 16 bytes" in done.stderr
        assert "pw-x" not in done.stderr and "Traceback" not in done.stderr


def test_generated_token_is_written_to_a_private_file_when_no_terminal(tmp_path: Path) -> None:
    """Under Docker stdout is the container log: the token goes to a 0600 file instead."""
    out = io.StringIO()
    ready = prepare(Settings(data=str(tmp_path / "db")), out)
    assert ready.tokens and ready.tokens not in out.getvalue()
    path = tmp_path / "db" / GENERATED_TOKEN_FILE
    assert str(path) in out.getvalue()
    assert path.read_text().strip() == ready.tokens
    assert stat.S_IMODE(path.stat().st_mode) == 0o600


def test_generated_token_is_shown_on_a_terminal(tmp_path: Path) -> None:
    """On a terminal the token is printed too, with where it is kept (the same file)."""
    leader, follower = pty.openpty()
    with os.fdopen(follower, "w") as terminal:
        ready = prepare(Settings(data=str(tmp_path / "db")), terminal)
    shown = ""
    while "readable by this user only)" not in shown:
        shown += os.read(leader, 4096).decode()
    os.close(leader)
    path = tmp_path / "db" / GENERATED_TOKEN_FILE
    assert ready.tokens and f"bearer token: {ready.tokens} (kept in {path}" in shown
    assert path.read_text().strip() == ready.tokens


def test_generated_token_is_kept_across_restarts(tmp_path: Path) -> None:
    """A host set up with the generated token keeps working after a restart, with or without
    a terminal: the next start reuses the kept token (and says so) rather than making one."""
    first, second = io.StringIO(), io.StringIO()
    token = prepare(Settings(data=str(tmp_path / "db")), first).tokens
    assert token and "generated one" in first.getvalue()
    leader, follower = pty.openpty()
    with os.fdopen(follower, "w") as terminal:
        on_terminal = prepare(Settings(data=str(tmp_path / "db")), terminal).tokens
    os.close(leader)
    again = prepare(Settings(data=str(tmp_path / "db")), second)
    assert on_terminal == again.tokens == token
    assert "earlier start" in second.getvalue() and token not in second.getvalue()


def test_a_kept_token_others_could_read_is_replaced(tmp_path: Path) -> None:
    """A token file readable by others (or a link, or too short) is not trusted: a new token
    replaces it, in a new 0600 file."""
    path = tmp_path / "db" / GENERATED_TOKEN_FILE
    token = prepare(Settings(data=str(tmp_path / "db")), io.StringIO()).tokens
    path.chmod(0o644)
    replaced = prepare(Settings(data=str(tmp_path / "db")), io.StringIO()).tokens
    assert replaced and replaced != token
    assert path.read_text().strip() == replaced and stat.S_IMODE(path.stat().st_mode) == 0o600
    target = tmp_path / "planted"
    target.write_text("x" * 40 + "\n")
    target.chmod(0o600)
    path.unlink()
    path.symlink_to(target)
    assert prepare(Settings(data=str(tmp_path / "db")), io.StringIO()).tokens != "x" * 40
    assert target.read_text() == "x" * 40 + "\n" and not path.is_symlink()


def test_configured_tokens_remove_a_stale_generated_one(tmp_path: Path) -> None:
    """Once tokens are configured the generated token is refused, so its file goes (and the
    start says so): no token on disk that no longer opens the server."""
    path = tmp_path / "db" / GENERATED_TOKEN_FILE
    prepare(Settings(data=str(tmp_path / "db")), io.StringIO())
    assert path.exists()  # positive control
    out = io.StringIO()
    prepare(Settings(data=str(tmp_path / "db"), tokens=TOKEN), out)
    assert not path.exists() and f"removed {path}" in out.getvalue()


def test_symlinked_default_data_directory_is_refused(tmp_path: Path) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    work = tmp_path / "work"
    work.mkdir()
    (work / "semmem-data").symlink_to(elsewhere)
    done = _serve(work, SEMMEM_TOKENS="t" * 20)
    assert done.returncode == 1, done.stderr
    assert "default data directory semmem-data is a symbolic link" in done.stderr
    assert str(elsewhere) in done.stderr  # says what it resolved to
    assert list(elsewhere.iterdir()) == []


def test_store_files_are_private_and_a_shared_tokens_file_is_warned(tmp_path: Path) -> None:
    """Under umask 022 the store's files would be 0644 (fact texts readable by anyone): they
    are 0600, directories 0700; a tokens file others can read is logged as a warning."""
    old = os.umask(0o022)
    tokens = tmp_path / "tokens"
    tokens.write_text(TOKEN + "\n")
    tokens.chmod(0o644)
    try:
        server = ServerProcess(tmp_path / "db", env={"SEMMEM_TOKENS": "",
                                                     "SEMMEM_TOKENS_FILE": str(tokens)}).start()
    finally:
        os.umask(old)
    try:
        server.wait_ready()
        with server.client() as c:
            for i in range(3):
                remember(c, "modes", f"a private fact number {i}")
        assert "can be read by other users (mode 644)" in server.output()
    finally:
        server.stop()
    paths = [p for p in (tmp_path / "db").rglob("*")]
    assert any(p.suffix == ".lance" and p.is_file() for p in paths)  # it sees the data files
    shared = [(str(p), oct(stat.S_IMODE(p.lstat().st_mode))) for p in [tmp_path / "db", *paths]
              if stat.S_IMODE(p.lstat().st_mode) & 0o077]
    assert shared == []


def test_a_store_folder_made_with_mkdir_is_made_private_once(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    """The README's MCP example path is usually made with plain `mkdir` (0755): it warned at
    every start. An empty folder is made 0700 as semmem makes its own, silently; one already
    holding files others may read is warned in one line that says the fix."""
    made = tmp_path / "made-by-hand"
    made.mkdir(mode=0o755)
    made.chmod(0o755)
    with caplog.at_level(logging.WARNING, "semmem.store"), owner_only(str(made)):
        pass
    assert stat.S_IMODE(made.stat().st_mode) == 0o700
    assert "open to other users" not in caplog.text
    held = tmp_path / "held"
    held.mkdir()
    (held / "a-file").write_text("x")
    held.chmod(0o755)
    with caplog.at_level(logging.WARNING, "semmem.store"), owner_only(str(held)):
        pass
    assert stat.S_IMODE(held.stat().st_mode) == 0o755  # its owner's choice, not undone
    [line] = [r.getMessage() for r in caplog.records if "open to other users" in r.getMessage()]
    assert line.endswith(f"`chmod 700 {held}` (new files in it are private anyway)")
