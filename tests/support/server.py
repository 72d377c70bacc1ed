"""The real-server harness: ``semmem serve`` as a subprocess on a free loopback port.

Used by the tests that need a real process (crash, wire limits, S3 replicas, the browser) and by
the benchmarks and drivers that measure one. Standard library and httpx only, so a benchmark
importing it loads neither pytest nor the app.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path

import httpx

REPO = Path(__file__).resolve().parents[2]
TOKEN = "test-token-provider"
ADMIN_TOKEN = "admin-token-console"
AUTH = {"Authorization": f"Bearer {TOKEN}"}
ADMIN = {"Authorization": f"Bearer {ADMIN_TOKEN}"}
JSON = {"Content-Type": "application/json"}
# What the soak and load runs set for the bundled model: one torch and BLAS thread.
ONE_THREAD = {"OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1", "SEMMEM_TORCH_THREADS": "1"}

# `semmem serve`'s own code path, with the fake embedder instead of the bundled model.
FAKE_LAUNCH = (
    "from semmem.embedding.fakes import HashingEmbedder; from semmem.settings import Settings; "
    "from semmem.web.server import serve; serve(Settings(), embedder=HashingEmbedder())"
)


def iso_in(seconds: float) -> str:
    """An ISO 8601 instant ``seconds`` from now (negative: in the past)."""
    at = datetime.now(UTC) + timedelta(seconds=seconds)
    return at.strftime("%Y-%m-%dT%H:%M:%S.") + f"{at.microsecond // 1000:03d}Z"


def free_port() -> int:
    """A TCP port free on 127.0.0.1 right now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


class ServerProcess:
    """One ``semmem serve`` process on 127.0.0.1, its output appended to a log file.

    ``model``: the bundled model through ``python -m semmem.cli serve``; otherwise the fake
    embedder through serve's own code path. ``env`` is applied last, over the harness's own
    ``SEMMEM_*`` settings (the caller's ``SEMMEM_*`` variables are dropped).
    ``maintenance_delay_s``: ``None`` leaves the server's default. ``python``: the interpreter
    that runs the server (default: this one; the client's tests run in a venv without semmem).
    """

    def __init__(self, data: Path, *, env: dict[str, str] | None = None, model: bool = False,
                 log: Path | None = None, maintenance_delay_s: float | None = 0.2,
                 python: str | None = None, launch: str | None = None,
                 cwd: Path | None = None) -> None:
        self.data = data
        self.port = free_port()
        self.extra_env = env or {}
        self.model = model
        self.maintenance_delay_s = maintenance_delay_s
        self.python = python or sys.executable
        self.launch = launch  # the ``-c`` code of a fake-embedder server (default FAKE_LAUNCH)
        # Where it runs (default: the repository, whose ``semmem`` a ``-c`` launch imports
        # before ``PYTHONPATH``'s: an older release's code runs elsewhere).
        self.cwd = cwd or REPO
        self.proc: subprocess.Popen[bytes] | None = None
        self.log = log or data.parent / f"server-{self.port}.log"
        self.ready_s = 0.0  # seconds from the latest start to ready
        self._started = 0.0

    @property
    def url(self) -> str:
        """Base URL."""
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> ServerProcess:
        """Start the process (does not wait for readiness); a restart gets a fresh port."""
        if self.proc is not None:
            self.port = free_port()
        env = {k: v for k, v in os.environ.items() if not k.startswith("SEMMEM_")}
        env.update({
            "SEMMEM_DATA": str(self.data), "SEMMEM_HOST": "127.0.0.1",
            "SEMMEM_PORT": str(self.port), "SEMMEM_TOKENS": TOKEN,
            "SEMMEM_ADMIN_TOKENS": ADMIN_TOKEN, "SEMMEM_LOG_LEVEL": "warning",
            "PYTHONUNBUFFERED": "1",
        })
        if self.maintenance_delay_s is not None:
            env["SEMMEM_MAINTENANCE_DELAY_S"] = str(self.maintenance_delay_s)
        env.update(self.extra_env)
        argv = ([self.python, "-m", "semmem.cli", "serve"] if self.model
                else [self.python, "-c", self.launch or FAKE_LAUNCH])
        self._started = time.monotonic()
        # A file, not a pipe: nobody reads a pipe while the server runs, and a full one blocks it.
        with self.log.open("ab") as sink:
            self.proc = subprocess.Popen(argv, env=env, cwd=self.cwd, stdout=sink,
                                         stderr=subprocess.STDOUT)
        return self

    def client(self) -> httpx.Client:
        """A client for this server (timeouts generous: the machine is shared)."""
        return httpx.Client(base_url=self.url, timeout=30.0)

    def wait_ready(self, timeout: float = 120.0) -> ServerProcess:
        """Block until ``/readyz`` answers 200 (``ready_s`` then says how long it took)."""
        with httpx.Client(base_url=self.url, timeout=10.0) as c:
            while True:
                assert self.proc is not None, "start() first"
                if self.proc.poll() is not None:
                    raise RuntimeError(f"server exited ({self.proc.returncode}): "
                                       f"{self.output()[-2000:]}")
                try:
                    if c.get("/readyz").status_code == 200:
                        self.ready_s = time.monotonic() - self._started
                        return self
                except httpx.TransportError:
                    pass
                if time.monotonic() - self._started > timeout:
                    raise TimeoutError(f"server not ready: {self.output()[-2000:]}")
                time.sleep(0.05)

    def kill9(self) -> None:
        """SIGKILL: no shutdown code runs."""
        assert self.proc is not None
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait(30)

    def stop(self) -> None:
        """Terminate (gracefully, then forcibly)."""
        if self.proc is None or self.proc.poll() is not None:
            return
        self.proc.terminate()
        try:
            self.proc.wait(15)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(15)

    def output(self) -> str:
        """What the process printed so far."""
        return self.log.read_text(errors="replace") if self.log.exists() else ""


# The application doors' tokens (``/ingest``, ``/store``): a provider token, a partition-bound
# reader and writer, and a scoped one.
READER = "reader-token-00000000"
WRITER = "writer-token-00000000"
SCOPED = "scoped-token-00000000"
DOOR_TOKENS = "\n".join([TOKEN, f"{READER} partition=bound access=read",
                         f"{WRITER} partition=bound", f"{SCOPED} scope.team=blue"])


@contextmanager
def served_with_tokens_file(base: Path, tokens: str = DOOR_TOKENS) -> Iterator[ServerProcess]:
    """A ready server under ``base`` whose tokens come from a file (owner-only) holding
    ``tokens``; stopped on exit."""
    path = base / "tokens"
    path.write_text(tokens + "\n")
    path.chmod(0o600)
    with served(base / "db", {"SEMMEM_TOKENS_FILE": str(path), "SEMMEM_TOKENS": ""}) as process:
        yield process


@contextmanager
def served(data: Path, env: dict[str, str]) -> Iterator[ServerProcess]:
    """A ready server on ``data`` with ``env`` over the test defaults; stopped on exit."""
    process = ServerProcess(data, env=env).start()
    try:
        yield process.wait_ready()
    finally:
        process.stop()
