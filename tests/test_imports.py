"""Engines load only where they are used: the contract and the declaration load none."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

ENGINES = ("lancedb", "lance", "pyarrow", "torch", "sentence_transformers", "onnxruntime",
           "fastapi")


@pytest.mark.parametrize("module", ["semmem.contract", "semmem.protocol.declaration",
                                    "semmem.store.views", "semmem", "semmem.memory",
                                    "semmem.wiring", "semmem.serving.dispatch", "semmem.cli"])
def test_import_loads_no_storage_or_model_engine(module: str) -> None:
    code = (f"import json, sys, {module}\n"
            f"print(json.dumps([e for e in {ENGINES!r} if e in sys.modules]))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True)
    assert json.loads(out.stdout) == []


def test_import_writes_no_environment() -> None:
    modules = "semmem, semmem.memory, semmem.store, semmem.wiring, semmem.web.app, semmem.cli"
    code = (f"import json, os; before = dict(os.environ); import {modules}\n"
            "changed = [k for k in os.environ if os.environ.get(k) != before.get(k)]\n"
            "print(json.dumps(sorted(changed)))")
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("LANCE", "HF_", "TRANSFORMERS"))}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         env=env)
    assert json.loads(out.stdout) == []
