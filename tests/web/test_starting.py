"""A server that cannot serve says so and stops: `semmem serve` ends with a non-zero status and
one line naming the fix when no retry can help (docs/operating.md, "Start-up"), and every
model-mismatch message, the server's and the CLI's, names both ways out."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import httpx

from semmem.embedding.files import default_model_dir, load_spec
from tests.support.memory import OTHER_MODEL, store_of_another_model
from tests.support.server import REPO, TOKEN, free_port


def _semmem(*args: str, timeout: float = 120, **env: str) -> tuple[
        subprocess.CompletedProcess[str], float]:
    """``python -m semmem.cli <args>`` (this clone's code) to its end, and how long it took."""
    clean = {k: v for k, v in os.environ.items() if not k.startswith("SEMMEM_")}
    clean.update({"PYTHONPATH": str(REPO), "SEMMEM_TOKENS": TOKEN, **env})
    started = time.monotonic()
    done = subprocess.run([sys.executable, "-m", "semmem.cli", *args], cwd=REPO, env=clean,
                          capture_output=True, text=True, timeout=timeout)
    return done, time.monotonic() - started


def _both_ways_out(line: str) -> None:
    assert "SEMMEM_MODEL=models/multilingual-e5-small" in line, line  # serve it as it is
    assert "`semmem reindex`" in line and "re-embeds every stored text" in line, line  # or move


def test_serve_on_a_store_of_another_model_exits_with_both_ways_out(tmp_path: Path) -> None:
    """The issue's `make run RUN_MODEL=…` on a store of the other model: it stayed up, /healthz
    200 and /readyz 503 for ever; now it ends within seconds, the fix in its last line."""
    store_of_another_model(tmp_path / "db")
    done, took = _semmem("serve", timeout=90, SEMMEM_DATA=str(tmp_path / "db"),
                         SEMMEM_PORT=str(free_port()), SEMMEM_MODEL=str(default_model_dir()))
    assert done.returncode == 1, done.stderr
    last = done.stderr.strip().splitlines()[-1]
    assert last.startswith(f"error: store {tmp_path / 'db'} was embedded with model "
                           f"'{OTHER_MODEL}', not '{load_spec(default_model_dir()).model_id}'")
    _both_ways_out(last)
    assert "Traceback" not in done.stderr
    assert took < 60, took  # the model's load, the store's open, then the exit


def test_serve_on_a_store_it_cannot_open_exits(tmp_path: Path) -> None:
    """A local store whose registry is broken: no retry fixes it, so the process ends."""
    store_of_another_model(tmp_path / "db")
    for version in (tmp_path / "db" / "_semmem.lance" / "_versions").iterdir():
        version.write_bytes(b"not a manifest")
    done, _ = _semmem("serve", timeout=90, SEMMEM_DATA=str(tmp_path / "db"),
                      SEMMEM_PORT=str(free_port()), SEMMEM_MODEL=str(default_model_dir()))
    assert done.returncode == 1, done.stderr
    last = done.stderr.strip().splitlines()[-1]
    assert last.startswith(f"error: cannot open store {tmp_path / 'db'}"), last


def test_cli_on_a_store_of_another_model_names_both_ways_out(tmp_path: Path) -> None:
    """The README's CLI lines without SEMMEM_MODEL, on a store switched to the other model:
    the message used to say only `semmem reindex`, which moves the store back under the
    server that serves it."""
    store_of_another_model(tmp_path / "db")
    done, _ = _semmem("recall", "-p", "p", "units", SEMMEM_DATA=str(tmp_path / "db"),
                      SEMMEM_MODEL=str(default_model_dir()))
    assert done.returncode == 1, done.stderr
    _both_ways_out(done.stderr.strip().splitlines()[-1])


def test_serve_waits_for_a_remote_store_that_does_not_answer(tmp_path: Path) -> None:
    """A remote store refusing every request at start may come back by itself: the server
    stays up (/healthz 200, /readyz 503), tries again with backoff, and is ready once it
    answers — where it used to fail once and stay unready for ever."""
    from tests.support.moto import moto_s3, options
    from tests.support.s3proxy import Fault, S3Proxy
    from tests.support.server import ServerProcess

    with moto_s3("semmem-start") as endpoint:
        proxy = S3Proxy(endpoint).start()
        proxy.faults(Fault("status", times=10**9, status=403, code="AccessDenied"))
        server = ServerProcess(tmp_path / "db", env={
            "SEMMEM_DATA": "s3://semmem-start/store",
            "SEMMEM_STORAGE_OPTIONS": json.dumps({**options(endpoint),
                                                  "aws_endpoint": proxy.endpoint}),
            "SEMMEM_LOG_LEVEL": "info"}).start()
        try:
            with httpx.Client(base_url=server.url, timeout=10) as http:
                deadline = time.monotonic() + 60
                while "store not reachable (try 2)" not in server.output():
                    assert server.proc is not None and server.proc.poll() is None, \
                        server.output()[-2000:]
                    assert time.monotonic() < deadline, server.output()[-2000:]
                    time.sleep(0.05)
                assert http.get("/healthz").status_code == 200
                assert http.get("/readyz").status_code == 503
                proxy.faults()  # the store answers again
                server.wait_ready(timeout=60)
        finally:
            server.stop()
            proxy.stop()
