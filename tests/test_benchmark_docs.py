"""Every benchmark command docs/benchmarks.md writes runs as written from a clone, at its
smallest size (``--smoke``), with the folders of the machine it ran on replaced: scratch
folders by a temporary one, other checkouts by this one, data sets by this machine's (the case
is skipped, saying so, where there is none)."""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from benchmarks.cases import CASES
from tests.support.bench_runs import (
    DOC,
    TOOLS,
    as_run,
    data_variables,
    doc_commands,
    doc_runs,
    smoke,
    uncited_cases,
    what_runs,
)
from tests.support.server import REPO


def test_the_doc_writes_every_benchmark_command_for_the_runner() -> None:
    """docs/benchmarks.md names its benchmarks as runner commands of cases that exist (the
    scripts before the runner are gone), and the extraction sees them (positive control)."""
    commands = doc_commands()
    assert any(c.startswith(".venv/bin/python -m benchmarks recall --sizes 1000 ")
               for c in commands), commands[:5]
    assert any("--keep" in c and "1000000" in c for c in commands)
    assert len(commands) > 40
    for command in commands:
        words = shlex.split(command)
        assert words[words.index("benchmarks") + 1] in {*CASES, *TOOLS}, command
    text = DOC.read_text(encoding="utf-8")
    assert not re.findall(r"python benchmarks/|benchmarks/\w+\.py --|node benchmarks/", text)


@pytest.mark.slow
@pytest.mark.timeout(1500)
def test_every_command_of_the_doc_runs_at_its_smallest_size(tmp_path: Path) -> None:
    """Each command of docs/benchmarks.md at its smallest size, two runner processes sharing
    them (commands that differ only in what a smoke run does not see run once); the runner's
    own commands as they are. Every case runs here or, named in no command, in
    tests/test_benchmarks.py."""
    env = {**{k: v for k, v in os.environ.items() if not k.startswith("SEMMEM_")},
           **data_variables(), "PYTHONPATH": str(REPO)}
    for command in doc_commands():
        words = shlex.split(command)
        if words[words.index("benchmarks") + 1] in TOOLS:
            subprocess.run([sys.executable, *words[words.index("-m"):]], cwd=REPO, env=env,
                           check=True, capture_output=True, timeout=60)
    runs = doc_runs(tmp_path)
    assert len(runs) < len(doc_commands()) - 20  # the same run is not made twice
    outcomes = smoke(runs, tmp_path)
    assert {o["args"][0] for o in outcomes} | set(uncited_cases()) == set(CASES)
    assert any(o["args"][:2] == ["recall", "--sizes"] and "--keep" in o["args"]
               and o["status"] == "ok" for o in outcomes)


def test_a_smoke_run_is_told_apart_by_what_it_runs(tmp_path: Path) -> None:
    """Two commands make one run when they differ only in the sizes --smoke sets, a scratch
    folder, an option set to its default or a variable read at a library's load; another
    option or variable makes another run."""
    def key(command: str) -> tuple[str, ...]:
        return what_runs(as_run(command, tmp_path, {}), tmp_path)

    base = key("python -m benchmarks recall --sizes 1000 --reps 120")
    assert base == key("python -m benchmarks recall --sizes=10 --smoke")
    assert base != key("python -m benchmarks recall --sizes 1000 --encoder torch")
    assert base == key("python -m benchmarks recall --encoder onnx")
    assert base == key("OMP_NUM_THREADS=1 python -m benchmarks recall")
    assert base != key("SEMMEM_EVAL_CACHE=/tmp/c python -m benchmarks recall")
    assert key("python -m benchmarks fence --dir /tmp/a") == key("python -m benchmarks fence")
    fair = key("python -m benchmarks model_fairness --rounds 5")
    assert fair == key("python -m benchmarks model_fairness --rounds 3 --repo ../before-tree")
    assert key("python -m benchmarks hostile") != key("python -m benchmarks hostile --repo AFTER")
