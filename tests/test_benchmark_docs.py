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
from typing import Any

import pytest

from benchmarks.cases import CASES
from tests.support.server import REPO
from tests.test_benchmarks import data_variables, smoke

DOC = REPO / "docs" / "benchmarks.md"
COMMAND = re.compile(r"(?:[A-Z_]+=\S+ )*(?:\S*python )?-m benchmarks [^`#\n]*")
OTHER_TREES = ("BEFORE", "AFTER", "../before-tree", "../h29-base")
TOOLS = ("list", "render")  # the runner's own commands (the smoke run is the test's)


def doc_commands() -> list[str]:
    """Every benchmark command docs/benchmarks.md writes: in a fenced block (a line, its
    continuations joined) or in a code span (its lines joined)."""
    text = DOC.read_text(encoding="utf-8")
    fenced = re.findall(r"^```\w*\n(.*?)^```", text, re.S | re.M)
    prose = re.sub(r"^```\w*\n.*?^```", "", text, flags=re.S | re.M)
    pieces = [line for block in fenced for line in block.replace("\\\n", " ").splitlines()]
    pieces += [" ".join(span.split()) for span in re.findall(r"`([^`]+)`", prose)]
    pieces += re.findall(r"^ {4}(\S.*)$", prose, re.M)  # indented code
    found = [c.strip().rstrip(",.;") for piece in pieces for c in COMMAND.findall(piece)]
    return list(dict.fromkeys(found))


def as_run(command: str, tmp: Path, variables: dict[str, str]) -> dict[str, Any]:
    """The runner's arguments and variables for ``command``, its machine's folders replaced:
    scratch folders by ``tmp``, other checkouts by this one, data sets by this machine's."""
    words = shlex.split(command)
    env = {}
    while "=" in words[0] and not words[0].startswith("-"):
        key, value = words.pop(0).split("=", 1)
        env[key] = value
    args = words[words.index("benchmarks") + 1:]
    data = {"locomo": variables.get("SEMMEM_LOCOMO"),
            "longmemeval": variables.get("SEMMEM_LONGMEMEVAL")}
    out = []
    for arg in args:
        if arg in OTHER_TREES:
            arg = str(REPO)
        elif arg == "DIR":
            arg = str(tmp / "kept")
        elif arg.endswith("=FILE"):  # another ONNX file: the bundled model's
            arg = arg.replace("FILE", str(REPO / "models" / "all-MiniLM-L6-v2" / "model.onnx"))
        elif arg.startswith("${TMPDIR:-/tmp}"):
            arg = str(tmp) + arg.removeprefix("${TMPDIR:-/tmp}")
        elif arg.startswith("/tmp/"):
            arg = str(tmp / arg.removeprefix("/tmp/"))
        elif arg.startswith("$SEMMEM_"):
            arg = variables.get(arg[1:], str(tmp / "no-data-set-here"))
        elif arg.startswith("../shared/data/"):
            kind, _, rest = arg.removeprefix("../shared/data/").partition("/")
            root = data.get(kind.removesuffix("-dev"))
            arg = str(Path(root) / rest) if root else str(tmp / "no-data-set-here")
        out.append(arg)
    env = {k: str(tmp / "cache") if v.startswith("/tmp/") else v for k, v in env.items()}
    return {"args": out, "env": env}


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
    """Each command of docs/benchmarks.md in one runner process at its smallest size (commands
    that differ only in the sizes --smoke overrides, or in scratch folders, run once; a bare
    case's run is tests/test_benchmarks.py's); the runner's own commands as they are."""
    variables = data_variables()
    env = {**{k: v for k, v in os.environ.items() if not k.startswith("SEMMEM_")},
           **variables, "PYTHONPATH": str(REPO)}
    runs = [as_run(c, tmp_path, variables) for c in doc_commands()]
    for tool in [r for r in runs if r["args"][0] in TOOLS]:
        subprocess.run([sys.executable, "-m", "benchmarks", *tool["args"]], cwd=REPO, env=env,
                       check=True, capture_output=True, timeout=60)
        runs.remove(tool)
    seen: dict[tuple[str, ...], dict[str, Any]] = {}
    for run in runs:
        args = run["args"]
        small = set(CASES[args[0]].smoke)
        key = tuple("TMP" if a.startswith(str(tmp_path)) else a for i, a in enumerate(args)
                    if a not in small and not (i and args[i - 1] in small))
        if len(key) > 1 or run["env"]:
            seen.setdefault((*key, repr(sorted(run["env"].items()))), run)
    outcomes = smoke(list(seen.values()), tmp_path)
    assert any(o["args"][:2] == ["recall", "--sizes"] and "--keep" in o["args"]
               and o["status"] == "ok" for o in outcomes)
