"""Engines load only where they are used: the contract and the declaration load none."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

ENGINES = ("lancedb", "lance", "pyarrow", "torch", "sentence_transformers", "onnxruntime",
           "fastapi")


@pytest.mark.parametrize("module", ["semmem.contract", "semmem.web.declaration",
                                    "semmem.store.views", "semmem"])
def test_import_loads_no_storage_or_model_engine(module: str) -> None:
    code = (f"import json, sys, {module}\n"
            f"print(json.dumps([e for e in {ENGINES!r} if e in sys.modules]))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True)
    assert json.loads(out.stdout) == []
