"""The client installs alone: httpx is its one requirement, and this venv (the client with
every extra and the test tools) holds none of the server's heavy engines."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import sysconfig
import zipfile
from importlib import metadata
from pathlib import Path

from conftest import REPO, SERVER_PYTHON

CLIENT = "clients/python"
SRC = REPO / CLIENT / "src" / "semmem_client"
HEAVY = ("torch", "onnxruntime", "lancedb", "pylance", "pyarrow", "fastapi", "semmem",
         "sentence-transformers", "numpy")


def test_requires_httpx_only() -> None:
    """The distribution's requirements outside extras are httpx alone."""
    requires = metadata.requires("semmem-client") or []
    core = [r for r in requires if "extra ==" not in r]
    assert [re.split(r"[^A-Za-z0-9_.-]", r, maxsplit=1)[0] for r in core] == ["httpx"]


def test_no_heavy_package_in_the_client_venv() -> None:
    """Neither the client nor its extras brought an engine of the server's; the check can see
    what is installed (httpx is found)."""
    # The venv's own site-packages: the repo root on sys.path (for the server harness) holds
    # the server's egg-info wherever the server is installed editable.
    paths = sorted({sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"]})
    installed = {d.metadata["Name"].lower() for d in metadata.distributions(path=paths)}
    assert "httpx" in installed
    assert not installed & set(HEAVY), sorted(installed & set(HEAVY))


def test_import_loads_no_framework() -> None:
    """``import semmem_client`` loads httpx and no adapter framework."""
    probe = ("import sys, semmem_client; "
             "print(sorted(m for m in ('langchain_core', 'langgraph', 'agents', 'openai') "
             "if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                         check=True).stdout.strip()
    assert out == "[]"


def test_the_install_lines_work(tmp_path: Path) -> None:
    """What the module docstrings tell a host to install exists: ``make client-wheel``'s
    recipe (run here as written, with the server's venv) builds the wheel they name, with the
    extras they name, and that wheel installed on its own imports (from where it went)."""
    recipe = re.search(r"^client-wheel:.*\n\t(.+)$", (REPO / "Makefile").read_text(), re.M)
    assert recipe is not None
    command = (recipe.group(1).replace("$(BIN)", str(Path(SERVER_PYTHON).parent))
               .replace("-w dist", f"-w {tmp_path / 'dist'}").replace("$(CLIENT)", CLIENT))
    subprocess.run(command, shell=True, cwd=REPO, check=True, timeout=300)
    [wheel] = (tmp_path / "dist").glob("*.whl")
    said = {m.group(1): m.group(2) for path in (SRC / "langchain.py", SRC / "openai_agents.py")
            for m in re.finditer(r"pip install 'dist/(\S+\.whl)\[([\w-]+)\]'",
                                 path.read_text())}
    assert set(said) == {wheel.name} and len(set(said.values())) == 1
    shown = set(re.findall(r"pip install '\./clients/python\[([\w-]+)\]'", "".join(
        p.read_text() for p in (SRC / "langchain.py", SRC / "openai_agents.py"))))
    assert shown == {"langchain", "openai-agents"}
    with zipfile.ZipFile(wheel) as zipped:
        meta = next(n for n in zipped.namelist() if n.endswith(".dist-info/METADATA"))
        extras = set(re.findall(r"^Provides-Extra: (\S+)", zipped.read(meta).decode(), re.M))
    assert {"langchain", "langgraph", "openai-agents"} <= extras
    site = tmp_path / "site"
    subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--no-index",
                    "--disable-pip-version-check", "--target", str(site), str(wheel)],
                   check=True, timeout=120)
    probe = "import semmem_client.langgraph as m; print(m.__file__)"
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                         check=True, env={**os.environ, "PYTHONPATH": str(site)}).stdout
    assert out.strip().startswith(str(site))
