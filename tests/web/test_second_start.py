"""A failed start touches nothing (issue 60, item 7): a second `semmem serve` on the folder and
port of a running one fails on the port with the folder as it was — the running server's
generated token file kept — and a start with configured tokens beside it (another port) keeps
that file while the server serving its token runs, and removes it once that server is gone."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from pathlib import Path

from semmem.web.server import GENERATED_TOKEN_FILE
from tests.support.server import FAKE_LAUNCH, REPO, TOKEN, ServerProcess, free_port
from tests.support.web import recall


def _second(data: Path, port: int, **env: str) -> subprocess.CompletedProcess[str]:
    """The README's `SEMMEM_TOKENS=… semmem serve` on ``data`` and ``port``, to its end."""
    clean = {k: v for k, v in os.environ.items() if not k.startswith("SEMMEM_")}
    clean.update({"PYTHONPATH": str(REPO), "SEMMEM_DATA": str(data), "SEMMEM_HOST": "127.0.0.1",
                  "SEMMEM_PORT": str(port), "SEMMEM_TOKENS": TOKEN, **env})
    return subprocess.run([sys.executable, "-c", FAKE_LAUNCH], cwd=REPO, env=clean,
                          capture_output=True, text=True, timeout=120)


def _answers(server: ServerProcess, token: str) -> int:
    with server.client() as c:
        return c.post("/memory", json=recall("anything"),
                      headers={"Authorization": f"Bearer {token}"}).status_code


def _file(path: Path) -> tuple[int, int, str]:
    """The file as it is: inode, modification time, text (a rewrite changes one)."""
    st = path.stat()
    return st.st_ino, st.st_mtime_ns, path.read_text()


def test_a_second_start_on_a_taken_port_keeps_the_running_servers_token(
        tmp_path: Path) -> None:
    data = tmp_path / "db"
    first = ServerProcess(data, env={"SEMMEM_TOKENS": ""}).start()
    try:
        first.wait_ready()
        token_file = data / GENERATED_TOKEN_FILE
        token = token_file.read_text().strip()
        assert _answers(first, token) == 200  # the generated token opens it
        before = _file(token_file)

        taken = _second(data, first.port)
        assert taken.returncode == 3, taken.stderr
        assert "address already in use" in taken.stderr, taken.stderr
        assert "removed" not in taken.stdout + taken.stderr
        assert _file(token_file) == before  # not removed, not rewritten
        assert _answers(first, token) == 200

        # Another port: it serves, but the token file a running server serves stays.
        beside = ServerProcess(data).start()
        try:
            beside.wait_ready()
            assert "kept" in beside.output() and "removed" not in beside.output()
            assert token_file.read_text().strip() == token
        finally:
            beside.stop()
    finally:
        first.stop()
    # Its server gone, the next start with configured tokens removes the file.
    after = ServerProcess(data).start()
    try:
        after.wait_ready()
        assert not token_file.exists() and f"removed {token_file}" in after.output()
    finally:
        after.stop()


def test_a_start_that_fails_on_the_port_makes_no_data_folder(tmp_path: Path) -> None:
    """The port taken before anything was made: no store folder, no token file."""
    data = tmp_path / "never"
    port = free_port()
    with socket.socket() as holder:
        holder.bind(("127.0.0.1", port))
        holder.listen()
        for env in ({"SEMMEM_TOKENS": ""}, {}):
            done = _second(data, port, **env)
            assert done.returncode == 3, done.stderr
            assert "address already in use" in done.stderr
            assert not data.exists()
