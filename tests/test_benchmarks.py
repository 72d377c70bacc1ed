"""The benchmarks stay runnable: no module of benchmarks/ shadows an installed package, every
case runs at its smallest size (those docs/benchmarks.md names in no command here; the others
as its commands, tests/test_benchmark_docs.py), a kept store is reused, and the cases that read
a public data set say where it is published when none is given. Figures are not asserted."""

from __future__ import annotations

import importlib.metadata
import importlib.util
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from benchmarks.cases import CASES
from tests.support.bench_runs import smoke, uncited_cases
from tests.support.server import REPO


def installed_names() -> set[str]:
    """The names an import may mean elsewhere: the standard library's modules, every installed
    distribution's top-level modules and its own name, and the optional modules the store's
    libraries look for (lance and lancedb import ``datasets`` if there is one)."""
    names = set(sys.stdlib_module_names) | set(importlib.metadata.packages_distributions())
    for dist in importlib.metadata.distributions():
        names.add(re.sub(r"[-.]+", "_", dist.metadata["Name"]).lower())
    for library in ("lance", "lancedb"):
        spec = importlib.util.find_spec(f"{library}.dependencies")
        if spec is not None and spec.origin is not None:
            names |= set(re.findall(r"_lazy_import\(\"(\w+)\"",
                                    Path(spec.origin).read_text(encoding="utf-8")))
    return names


def shadowing(folder: Path, names: set[str]) -> list[str]:
    """The modules and packages under ``folder`` named as one of ``names``."""
    found = []
    for path in sorted(folder.rglob("*")):
        stem = path.stem if path.suffix == ".py" else path.name if path.is_dir() else ""
        if stem and not stem.startswith("__") and stem in names:
            found.append(str(path.relative_to(folder)))
    return found


def test_no_module_in_benchmarks_takes_the_name_of_an_installed_package(
        tmp_path: Path) -> None:
    """Running a script puts its folder first on sys.path: a benchmarks/datasets.py once hid
    the ``datasets`` package Lance imports while writing a table."""
    names = installed_names()
    for planted in ("numpy.py", "json.py", "datasets.py", "lancedb"):
        (tmp_path / planted).touch() if planted.endswith(".py") else (tmp_path / planted).mkdir()
    (tmp_path / "harmless_case.py").touch()
    # the check sees each kind: a distribution, the standard library, an optional import
    assert shadowing(tmp_path, names) == ["datasets.py", "json.py", "lancedb", "numpy.py"]
    assert shadowing(REPO / "benchmarks", names) == []


@pytest.mark.slow
@pytest.mark.timeout(1500)
def test_every_case_no_command_of_the_doc_runs_runs_at_its_smallest_size(
        tmp_path: Path) -> None:
    """``python -m benchmarks NAME --smoke`` for every case docs/benchmarks.md names in no
    command (the others run as its commands, tests/test_benchmark_docs.py): a benchmark that
    cannot run fails here (figures are not asserted)."""
    uncited = uncited_cases()
    assert "load" in uncited and "recall" not in uncited  # positive and negative controls
    outcomes = smoke([{"args": [name]} for name in uncited], tmp_path)
    assert {o["args"][0] for o in outcomes} == set(uncited)


def test_every_case_module_runs_something() -> None:
    """A case is a module with ``cli`` or one the runner runs as ``__main__``: without its
    ``if __name__ == "__main__"`` block, a run does nothing and passes (typescript's did)."""
    for name in CASES:
        source = (REPO / "benchmarks" / "cases" / f"{name}.py").read_text(encoding="utf-8")
        assert "\ndef cli(" in source or '\nif __name__ == "__main__":' in source, name


def test_a_kept_store_is_reused_by_the_next_run(tmp_path: Path) -> None:
    """``recall --keep DIR``: the first run writes the store and tags it, the next restores it
    without writing a row (what makes a 1M run repeatable)."""
    out = tmp_path / "results.jsonl"
    command = [sys.executable, "-m", "benchmarks", "recall", "--keep", str(tmp_path / "kept"),
               "--no-http", "--smoke", "--out", str(out)]
    for _ in range(2):
        subprocess.run(command, cwd=REPO, check=True, capture_output=True, timeout=300,
                       env={**os.environ, "PYTHONPATH": str(REPO)})
    first, second = (json.loads(line) for line in out.read_text().splitlines())
    assert "write_s" in first["figures"] and not first["figures"].get("reused")
    assert second["figures"]["reused"] is True and "write_s" not in second["figures"]
    assert second["command"].startswith("python -m benchmarks recall --keep ")
    assert {"cores", "memory_gb", "cpu"} <= second["machine"].keys() and second["commit"]


# Each case, the arguments that reach its data set, and the data set it names.
RUNS = [
    ("eval_locomo", [], "LoCoMo", "github.com/snap-research/locomo", "SEMMEM_LOCOMO"),
    ("indexed_quality", [], "LoCoMo", "github.com/snap-research/locomo", "SEMMEM_LOCOMO"),
    ("quiet_hints", [], "LoCoMo", "github.com/snap-research/locomo", "SEMMEM_LOCOMO"),
    ("multilingual", ["--no-locomo"], "MemSim", "github.com/nuster1128/MemSim",
     "SEMMEM_MEMSIM"),
    ("multilingual", ["--no-memsim"], "LoCoMo", "github.com/snap-research/locomo",
     "SEMMEM_LOCOMO"),
    ("conversations", ["--dataset", "longmemeval"], "LongMemEval",
     "github.com/xiaowu0162/LongMemEval", "SEMMEM_LONGMEMEVAL"),
    ("conversations", ["--dataset", "locomo"], "LoCoMo", "github.com/snap-research/locomo",
     "SEMMEM_LOCOMO"),
    ("ingest", ["--fake"], "LongMemEval", "github.com/xiaowu0162/LongMemEval",
     "SEMMEM_LONGMEMEVAL"),
]


@pytest.mark.parametrize(("case", "args", "name", "source", "variable"), RUNS)
def test_a_benchmark_without_its_data_set_says_where_it_is_published(
        tmp_path: Path, case: str, args: list[str], name: str, source: str,
        variable: str) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("SEMMEM_")}
    env["PYTHONPATH"] = str(REPO)
    command = [sys.executable, "-m", "benchmarks", case, *args]
    done = subprocess.run(command, cwd=REPO, env=env, capture_output=True, text=True,
                          timeout=120)
    assert done.returncode != 0
    said = done.stderr.strip().splitlines()[-1]
    assert said.startswith(f"{name}: no folder given. This benchmark reads the public {name} "
                           f"data set, published at https://{source}"), said
    assert said.endswith(f"set {variable}."), said
    # and with the variable naming a folder that is not there, it says that
    env[variable] = str(REPO / "no-such-folder")
    again = subprocess.run(command, cwd=REPO, env=env, capture_output=True, text=True,
                           timeout=120)
    assert f"{name}: {REPO / 'no-such-folder'} does not exist." in again.stderr
