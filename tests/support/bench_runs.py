"""The benchmark runs the tests make, once each: the commands docs/benchmarks.md writes (their
machine's folders replaced by this one's), cut to one run per distinct case and options at the
smallest size, and the bare runs of the cases no command names; run by the runner's ``smoke``
in two processes that share them."""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path
from typing import Any

from benchmarks.cases import CASES
from tests.support.server import REPO

DOC = REPO / "docs" / "benchmarks.md"
COMMAND = re.compile(r"(?:[A-Z_]+=\S+ )*(?:\S*python )?-m benchmarks [^`#\n]*")
OTHER_TREES = ("BEFORE", "AFTER", "../before-tree", "../h29-base")
TOOLS = ("list", "render")  # the runner's own commands (the smoke run is the tests')
# Options whose value here is the case's default: the trees a server runs (with the other tree
# replaced by this one, a command differs from the one without them in nothing), the encoder.
DEFAULTS = {"agent_turns": {"--server-repo": str(REPO)}, "model_fairness": {"--repo": str(REPO)},
            "object_store": {"--repo": str(REPO)}, "turn_trace": {"--server-repo": str(REPO)},
            "update_stall": {"--repo": str(REPO)},
            "recall": {"--encoder": "onnx", "--server-repo": str(REPO)}}
# Variables read once, when a library loads: in a smoke process that has loaded it they change
# nothing (a command that sets them runs as the one that does not).
AT_LOAD = {"OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS"}
DATA_SETS = {"locomo": "SEMMEM_LOCOMO", "longmemeval": "SEMMEM_LONGMEMEVAL"}
Run = dict[str, Any]


def data_variables() -> dict[str, str]:
    """The data sets' variables for this machine: as set, else from the folder beside the
    checkout (or beside a folder holding it) that holds them, ``shared/data``."""
    roots = [parent / "shared" / "data" for parent in REPO.parents]
    root = next((r for r in roots if r.is_dir()), roots[0])
    found = {"SEMMEM_LOCOMO": root / "locomo-dev", "SEMMEM_LONGMEMEVAL": root / "longmemeval-dev"}
    return {k: os.environ.get(k) or str(v) for k, v in found.items()
            if os.environ.get(k) or v.exists()}


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


def as_run(command: str, tmp: Path, variables: dict[str, str]) -> Run:
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


def what_runs(run: Run, tmp: Path) -> tuple[str, ...]:
    """What a smoke run of ``run`` does: its case and options without those the case's
    smallest size sets (and their values), the runner's own, scratch folders' names and options
    set to their default; and its variables but those read at a library's load."""
    name, *args = run["args"]
    small = CASES[name].smoke
    sets = {o: i + 1 < len(small) and not small[i + 1].startswith("--")
            for i, o in enumerate(small) if o.startswith("--")}
    sets |= {"--smoke": False, "--out": True}
    defaults = DEFAULTS.get(name, {})
    kept: list[str] = []
    words = iter(args)
    for word in words:
        option, _, value = word.partition("=")
        if option in sets:
            if sets[option] and not value:
                next(words, None)
            continue
        if option in defaults:
            value = value or next(words, "")
            if value != defaults[option]:
                kept += [option, value]
            continue
        kept.append("TMP" if word.startswith(str(tmp)) else word)
    env = sorted((k, v) for k, v in run["env"].items() if k not in AT_LOAD)
    return (name, *kept, repr(env))


def doc_runs(tmp: Path) -> list[Run]:
    """One run per distinct smoke run of docs/benchmarks.md's commands (the runner's own
    commands left out)."""
    variables = data_variables()
    runs: dict[tuple[str, ...], Run] = {}
    for command in doc_commands():
        run = as_run(command, tmp, variables)
        if run["args"][0] not in TOOLS:
            runs.setdefault(what_runs(run, tmp), run)
    return list(runs.values())


def uncited_cases() -> list[str]:
    """The cases no command of docs/benchmarks.md runs."""
    cited = {shlex.split(c)[shlex.split(c).index("benchmarks") + 1] for c in doc_commands()}
    return [name for name in CASES if name not in cited]


def smoke(runs: list[Run], tmp: Path, jobs: int = 2) -> list[dict[str, Any]]:
    """Run each of ``runs`` (the runner's arguments and variables) at its smallest size, in
    ``jobs`` runner processes; each one's outcome. None may fail; a case is skipped only for a
    data set or a build this machine does not have, and says so."""
    commands, report = tmp / "commands.jsonl", tmp / "report.jsonl"
    commands.write_text("".join(json.dumps(run) + "\n" for run in runs))
    env = {k: v for k, v in os.environ.items() if not k.startswith("SEMMEM_")}
    env.update(data_variables(), PYTHONPATH=str(REPO))
    subprocess.run([sys.executable, "-m", "benchmarks", "smoke", "--commands", str(commands),
                    "--report", str(report), "--jobs", str(jobs)], cwd=REPO, env=env,
                   capture_output=True, text=True, timeout=1500)
    outcomes = [json.loads(line) for line in report.read_text().splitlines()]
    assert sorted(json.dumps(o["args"]) for o in outcomes) == sorted(
        json.dumps(r["args"]) for r in runs)
    failed = [o for o in outcomes if o["status"] == "failed"]
    assert not failed, "\n\n".join(f"{o['args']}: {o['error']}" for o in failed)
    here = {name for name, variable in DATA_SETS.items() if variable in data_variables()}
    for outcome in outcomes:
        if outcome["status"] == "skipped":
            assert re.search(r"data set|needs ", outcome["reason"]), outcome
            assert not any(f"the {name} data set" in outcome["reason"] for name in here), (
                f"skipped though the data set is here: {outcome}")
    return outcomes
