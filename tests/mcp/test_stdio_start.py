"""`semmem mcp` follows serve's start-up rule (docs/operating.md, "Start-up"): on a store it
can never serve — here one embedded by another model, as the README's MCP JSON meets it, with
no SEMMEM_MODEL — the process ends, non-zero, with serve's one line, instead of staying up and
answering every tool call "not ready" (issue 62, item 4)."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from semmem.embedding.files import default_model_dir
from tests.support.memory import OTHER_MODEL, store_of_another_model
from tests.support.server import REPO, TOKEN, free_port


def _env(data: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("SEMMEM_")}
    return env | {"PYTHONPATH": str(REPO), "SEMMEM_DATA": str(data), "SEMMEM_TOKENS": TOKEN,
                  "SEMMEM_MODEL": str(default_model_dir()), "SEMMEM_PORT": str(free_port())}


@pytest.mark.model
def test_mcp_on_a_store_of_another_model_exits_with_serves_line(tmp_path: Path) -> None:
    data = tmp_path / "db"
    store_of_another_model(data)
    served = subprocess.run([sys.executable, "-m", "semmem.cli", "serve"], cwd=REPO,
                            env=_env(data), capture_output=True, text=True, timeout=120)
    assert served.returncode == 1, served.stderr
    line = served.stderr.strip().splitlines()[-1]
    assert line.startswith(f"error: store {data} was embedded with model '{OTHER_MODEL}'")

    started = time.monotonic()
    # stdin stays open, as a host's pipe does: before, the process waited on it for ever
    with (tmp_path / "out").open("w+") as out, (tmp_path / "err").open("w+") as err:
        mcp = subprocess.Popen([sys.executable, "-m", "semmem.cli", "mcp", "-p", "p"], cwd=REPO,
                               env=_env(data), stdin=subprocess.PIPE, stdout=out, stderr=err)
        try:
            mcp.wait(timeout=90)
        except subprocess.TimeoutExpired:
            mcp.kill()
            mcp.wait()
            pytest.fail(f"semmem mcp stayed up on a store it cannot serve: "
                        f"{(tmp_path / 'err').read_text()}")
        finally:
            assert mcp.stdin is not None
            mcp.stdin.close()
    stderr = (tmp_path / "err").read_text()
    assert mcp.returncode == 1, stderr
    assert stderr.strip().splitlines()[-1] == line, stderr
    assert "Traceback" not in stderr and (tmp_path / "out").read_text() == ""
    assert time.monotonic() - started < 60
