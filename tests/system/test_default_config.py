"""The shipped defaults, as a new user runs them: `semmem serve` as `make run` starts it (the
relative default data directory `semmem-data`, default settings, the bundled model, a generated
token) and the CLI on the default data directory. Every test store elsewhere is an absolute
temporary path; this is the configuration those miss.

Each run goes through remember, recall, update, forget, a restart and a maintenance cycle, and
fails on any WARNING, ERROR or traceback in the output that the test did not provoke on purpose.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import threading
import time
import uuid
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.support.files import files_with
from tests.support.server import REPO, free_port, iso_in

pytestmark = pytest.mark.timeout(600)

PARALLEL = 40
PROBLEM = re.compile(r"WARNING|ERROR|CRITICAL|Traceback| WARN |\bpanicked\b")


def _env() -> dict[str, str]:
    """The caller's environment without any semmem setting (defaults only), the checkout
    importable as `make run`'s editable install makes it."""
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("SEMMEM_", "LANCE_LOG", "LANCEDB_LOG"))}
    env["PYTHONPATH"] = str(REPO)
    env["PYTHONUNBUFFERED"] = "1"
    return env


def problems(output: str) -> list[str]:
    """Lines of output that report a warning, an error or a traceback."""
    return [line for line in output.splitlines() if PROBLEM.search(line)]


class DefaultServer:
    """`semmem serve` with no settings but a free port, in ``cwd`` (its data: ./semmem-data)."""

    def __init__(self, cwd: Path) -> None:
        self.cwd = cwd
        self.log = cwd / "serve.log"
        self.proc: subprocess.Popen[bytes] | None = None
        self.port = 0
        self.token = ""

    def start(self) -> DefaultServer:
        self.port = free_port()
        mark = self.log.stat().st_size if self.log.exists() else 0
        with self.log.open("ab") as sink:
            self.proc = subprocess.Popen(
                [sys.executable, "-m", "semmem.cli", "serve", "--port", str(self.port)],
                cwd=self.cwd, env=_env(), stdout=sink, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + 180
        while True:
            assert self.proc.poll() is None, self.output()[-3000:]
            # no terminal attached: the generated token is in a file, and the output says where
            found = re.search(r"it is in (\S+) \(readable", self.output()[mark:])
            if found:
                self.token = (self.cwd / found.group(1)).read_text().strip()
                try:
                    if httpx.get(f"{self.url}/readyz", timeout=5).status_code == 200:
                        return self
                except httpx.TransportError:
                    pass
            assert time.monotonic() < deadline, self.output()[-3000:]
            time.sleep(0.1)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            self.proc.wait(30)

    def output(self) -> str:
        return self.log.read_text(errors="replace") if self.log.exists() else ""

    def call(self, body: dict[str, Any]) -> dict[str, Any]:
        envelope = {"version": 1, "operationId": uuid.uuid4().hex, "partition": "alice",
                    "access": "read-write", "deadlineAt": iso_in(60), **body}
        for _ in range(50):  # a 429 asks to retry shortly (parallel writes, a busy machine)
            r = httpx.post(f"{self.url}/memory", json=envelope, timeout=60,
                           headers={"Authorization": f"Bearer {self.token}"})
            if r.status_code != 429:
                break
            time.sleep(0.2)
        assert r.status_code == 200, r.text
        result: dict[str, Any] = r.json()
        return result

    def tool(self, name: str, **arguments: Any) -> dict[str, Any]:
        result: dict[str, Any] = self.call({"operation": "tool", "tool": name,
                                            "arguments": arguments})["result"]
        return result

    def recall(self, text: str | None) -> dict[str, Any]:
        return self.call({"operation": "recall", "input": {"text": text}, "maxBytes": 4096})


def test_semmem_serve_with_the_shipped_defaults(tmp_path: Path) -> None:
    server = DefaultServer(tmp_path).start()
    data = tmp_path / "semmem-data"
    secret = f"mark{uuid.uuid4().hex}"
    try:
        assert server.tool("remember", text="Prefers metric units")["n"] == 1
        n = server.tool("remember", text=f"Door code {secret}")["n"]
        assert "1. Prefers metric units" in server.recall("which units?")["text"]
        server.tool("update", n=1, text="Prefers metric units, and Celsius")
        # ordinary parallel writes: compactions race them (Lance's own warnings showed here)
        threads = [threading.Thread(target=server.tool, args=("remember",),
                                    kwargs={"text": f"Parallel fact number {i}"})
                   for i in range(PARALLEL)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert server.tool("forget", n=n)["forgotten"] is True
        assert data.is_dir()
        # the maintenance cycle: the forgotten text leaves every file (compaction, cleanup and
        # the orphan sweep all ran on the relative directory)
        deadline = time.monotonic() + 120
        while files_with(data, secret):
            assert time.monotonic() < deadline, "the forget was never purged"
            time.sleep(1)
        time.sleep(3)  # one more pass after the purge, with its orphan sweep
        server.stop()
        server.start()  # a restart: a new generated token, the same data
        body = server.recall(None)
        assert "1. Prefers metric units, and Celsius" in body["text"]
        assert secret not in body["text"]
        assert server.tool("remember", text="After the restart")["n"] == n + PARALLEL + 1
    finally:
        server.stop()
    assert problems(server.output()) == []


def _cli(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    done = subprocess.run([sys.executable, "-m", "semmem.cli", *args], cwd=cwd, env=_env(),
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert problems(done.stdout + done.stderr) == [], done.stderr
    return done


def test_the_cli_with_the_default_data_directory(tmp_path: Path) -> None:
    secret = f"mark{uuid.uuid4().hex}"
    _cli(tmp_path, "remember", "Has a cat named Tom", "-p", "alice")
    _cli(tmp_path, "remember", f"Locker {secret}", "-p", "alice")
    out = _cli(tmp_path, "recall", "-p", "alice", "pets?").stdout
    assert "1. Has a cat named Tom" in out
    _cli(tmp_path, "forget", "2", "-p", "alice")
    time.sleep(11)  # past the default version retention (10 s): one maintain must purge
    _cli(tmp_path, "maintain")
    assert (tmp_path / "semmem-data").is_dir()
    assert files_with(tmp_path / "semmem-data", secret) == []
    assert _cli(tmp_path, "list", "-p", "alice").stdout == "1. Has a cat named Tom\n"


@pytest.mark.skipif(shutil.which("git") is None, reason="needs git")
def test_the_default_data_directory_is_ignored_by_git() -> None:
    done = subprocess.run(["git", "check-ignore", "-q", "semmem-data/x"], cwd=REPO)
    assert done.returncode == 0, "semmem-data/ would show up in git status after `make run`"


async def _seed_indexed(data: Path, count: int) -> None:
    """A partition past the default index threshold: random vectors under the bundled model's
    id (written through the store, which is fast), the first one a real fact's."""
    import numpy as np

    from semmem.embedding.choice import open_model
    from semmem.embedding.files import default_model_dir
    from semmem.store import ItemRow, Mutation, Store

    model = open_model(default_model_dir(), "auto")
    rng = np.random.default_rng(5)
    vectors = rng.normal(size=(count, model.dim)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    fact = model.embed_batch(["Prefers metric units"])[0]
    vectors[0] = fact
    # Random vectors have no clusters, so the index's lists would be arbitrary and the fact's
    # list missed by the query's probes now and then (a real memory's facts cluster by
    # topic): give it a topic, a few hundred vectors a third aligned with it (cosine ≈ 0.35, too
    # far for a write hint).
    near = slice(1, 301)
    vectors[near] = 0.35 * fact + 0.937 * vectors[near]
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    texts = ["Prefers metric units", *(f"Filler fact number {i}" for i in range(2, count + 1))]
    store = Store(str(data), dim=model.dim, model_id=model.model_id)
    await store.open()
    rows = [ItemRow(i + 1, t, vectors[i], i, i, 1) for i, t in enumerate(texts)]
    await store.write("alice", lambda _view: Mutation(items=rows, hwm=count))
    await store.close()


def test_an_indexed_partition_with_the_shipped_defaults(tmp_path: Path) -> None:
    """Past the index threshold (50,000 by default): recall and the write hints go through
    the vector index, and the log stays clean."""
    import asyncio

    asyncio.run(_seed_indexed(tmp_path / "semmem-data", 50_500))
    # seeded in-process under the test's umask; the CLI (umask 077) would have made it 0700
    (tmp_path / "semmem-data").chmod(0o700)
    _cli(tmp_path, "maintain")  # builds the index
    server = DefaultServer(tmp_path).start()
    try:
        assert "1. Prefers metric units" in server.recall("which units do I prefer?")["text"]
        done = server.tool("remember", text="Likes to use the metric system for measurements")
        assert done["n"] == 50_501 and [s["n"] for s in done["similar"]] == [1]
        assert server.tool("update", n=2, text="Filler fact, edited")["n"] == 2
        assert server.tool("search", query="metric")["items"][0]["n"] in (1, 50_501)
    finally:
        server.stop()
    assert problems(server.output()) == []
