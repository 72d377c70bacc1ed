"""The client installs alone: httpx is its one requirement, and this venv (the client with
every extra and the test tools) holds none of the server's heavy engines."""

from __future__ import annotations

import re
import subprocess
import sys
import sysconfig
from importlib import metadata

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
