"""The benchmarks that read a public data set take it as an argument or a variable and, when
neither names one, say which data set it is and where it is published (none is in the
repository: tests/test_docs.py checks no tracked file names a folder of one machine)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.server import REPO

# Each script, the arguments that reach its data set, and the data set it names.
RUNS = [
    ("eval_locomo.py", [], "LoCoMo", "github.com/snap-research/locomo", "SEMMEM_LOCOMO"),
    ("indexed_quality.py", [], "LoCoMo", "github.com/snap-research/locomo", "SEMMEM_LOCOMO"),
    ("quiet_hints.py", [], "LoCoMo", "github.com/snap-research/locomo", "SEMMEM_LOCOMO"),
    ("multilingual.py", ["--no-locomo"], "MemSim", "github.com/nuster1128/MemSim",
     "SEMMEM_MEMSIM"),
    ("multilingual.py", ["--no-memsim"], "LoCoMo", "github.com/snap-research/locomo",
     "SEMMEM_LOCOMO"),
    ("conversations.py", ["--dataset", "longmemeval"], "LongMemEval",
     "github.com/xiaowu0162/LongMemEval", "SEMMEM_LONGMEMEVAL"),
    ("conversations.py", ["--dataset", "locomo"], "LoCoMo", "github.com/snap-research/locomo",
     "SEMMEM_LOCOMO"),
    ("ingest_bench.py", ["--fake"], "LongMemEval", "github.com/xiaowu0162/LongMemEval",
     "SEMMEM_LONGMEMEVAL"),
]


@pytest.mark.parametrize(("script", "args", "name", "source", "variable"), RUNS)
def test_a_benchmark_without_its_data_set_says_where_it_is_published(
        tmp_path: Path, script: str, args: list[str], name: str, source: str,
        variable: str) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("SEMMEM_")}
    env["PYTHONPATH"] = str(REPO)
    done = subprocess.run([sys.executable, str(REPO / "benchmarks" / script), *args],
                          cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode != 0
    said = done.stderr.strip().splitlines()[-1]
    assert said.startswith(f"{name}: no folder given. This benchmark reads the public {name} "
                           f"data set, published at https://{source}"), said
    assert said.endswith(f"set {variable}."), said
    # and with the variable naming a folder that is not there, it says that
    env[variable] = str(REPO / "no-such-folder")
    again = subprocess.run([sys.executable, str(REPO / "benchmarks" / script), *args],
                           cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)
    assert f"{name}: {REPO / 'no-such-folder'} does not exist." in again.stderr
