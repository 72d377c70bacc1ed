"""Running one case: its arguments (and, with ``--smoke``, those of its smallest size), its
output, and its result lines (``benchmarks.harness.record``) appended to the results file."""

from __future__ import annotations

import contextlib
import importlib
import io
import json
import os
import runpy
import shlex
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any, TextIO

from benchmarks.cases import CASES, Case

REPO = Path(__file__).resolve().parent.parent
RESULTS = REPO / "data" / "benchmarks.jsonl"  # /data/ is not tracked
DATA_VARIABLES = {"locomo": "SEMMEM_LOCOMO", "longmemeval": "SEMMEM_LONGMEMEVAL",
                  "memsim": "SEMMEM_MEMSIM"}


class Skipped(Exception):
    """A smoke run that cannot run here, and why (a data set or a build that is missing)."""


class Tee(io.TextIOBase):
    """Standard output passed through and kept."""

    def __init__(self, out: TextIO) -> None:
        self.out = out
        self.kept = io.StringIO()

    def write(self, text: str) -> int:
        self.out.write(text)
        return self.kept.write(text)

    def flush(self) -> None:
        self.out.flush()


@contextlib.contextmanager
def argv_of(argv: list[str]) -> Iterator[None]:
    """``sys.argv`` set for a case that reads it, then restored."""
    saved = sys.argv
    sys.argv = argv
    try:
        yield
    finally:
        sys.argv = saved


def data_folder(case: Case, args: list[str]) -> Path:
    """The data set folder (or file) a smoke run reads: a path among the arguments that exists,
    else the case's variable; raises ``Skipped`` when neither is there."""
    for arg in args:
        if ("/" in arg or arg.startswith(".")) and Path(arg).exists():
            return Path(arg)
    variable = DATA_VARIABLES[case.data]
    given = os.environ.get(variable)
    if given and Path(given).exists():
        return Path(given)
    raise Skipped(f"{case.name}: reads the {case.data} data set; no folder given as an "
                  f"argument or in {variable} exists here")


def smoke_args(case: Case, args: list[str], tmp: Path) -> tuple[list[str], dict[str, str]]:
    """The arguments of the case's smallest size, and the variables to set; a data set folder
    is cut to its first file (a tiny slice); raises ``Skipped`` when a run cannot happen."""
    if case.needs:
        path, how = case.needs.split(": ", 1)
        if not (REPO / path).exists():
            raise Skipped(f"{case.name}: needs {path} ({how})")
    env = {"SEMMEM_BENCH_SMOKE": "1"}  # caps what a case sizes on its own (the base set)
    args = list(args)
    if case.data:
        folder = data_folder(case, args)
        if folder.is_dir() and case.data != "memsim":
            files = sorted(p for p in folder.iterdir() if p.suffix == ".json")
            tiny = tmp / f"{case.data}-slice"
            tiny.mkdir(exist_ok=True)
            for file in files[:case.files]:
                (tiny / file.name).write_bytes(file.read_bytes())
            args = [str(tiny) if a == str(folder) else a for a in args]
            env[DATA_VARIABLES[case.data]] = str(tiny)
    (tmp / "scratch").mkdir(exist_ok=True)
    filled = [str(tmp / "scratch") if a == "{tmp}" else str(REPO) if a == "{repo}" else a
              for a in case.smoke]
    return [*args, *filled], env


@contextlib.contextmanager
def environment(env: dict[str, str]) -> Iterator[None]:
    """Variables set for a run, then restored."""
    saved = {k: os.environ.get(k) for k in env}
    os.environ.update(env)
    try:
        yield
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


def run_module(case: Case, args: list[str]) -> tuple[list[dict[str, Any]], str]:
    """The case's figures and the text it shows."""
    python = REPO / case.python / "bin" / "python"
    asks_help = "-h" in args or "--help" in args  # a case's options: shown by any interpreter
    if (case.python != ".venv" and not asks_help
            and Path(sys.prefix).resolve() != python.parent.parent.resolve()):
        if not python.exists():
            raise SystemExit(f"{case.name} runs in {case.python}, which is not here: {case.needs}")
        # a case of another venv (the client's): run by that venv's interpreter
        done = subprocess.run([str(python), "-m", "benchmarks", case.name, *args, "--out",
                               os.devnull], cwd=REPO, capture_output=True, text=True)
        sys.stdout.write(done.stdout)
        if done.returncode != 0:
            raise SystemExit(f"{case.name} ({python}): {done.stderr[-3000:]}")
        return [{"output": done.stdout.splitlines()}], ""
    module = importlib.import_module(case.module)
    if hasattr(module, "cli"):
        figures: list[dict[str, Any]] = module.cli(args)
        text = module.table(figures) if hasattr(module, "table") else "\n".join(
            json.dumps(f) for f in figures)
        return figures, text + "\n"
    tee = Tee(sys.stdout)
    code: Any = 0
    with argv_of([f"benchmarks {case.name}", *args]), contextlib.redirect_stdout(tee):
        sys.modules.pop(case.module, None)  # imported above: run afresh, as a script was
        try:  # the script as it ran before the runner: its module run as __main__
            runpy.run_module(case.module, run_name="__main__", alter_sys=False)
        except SystemExit as stop:
            code = stop.code
    if code not in (0, None):
        raise SystemExit(code)
    lines = tee.kept.getvalue().splitlines()
    parsed = []
    for line in lines:
        with contextlib.suppress(ValueError):
            value = json.loads(line)
            if isinstance(value, dict):
                parsed.append(value)
    return [{"output": lines, **({"json": parsed} if parsed else {})}], ""


def run(name: str, args: list[str], *, smoke: bool = False, out: Path | None = None,
        env: dict[str, str] | None = None) -> list[dict[str, Any]]:
    """Run case ``name`` with ``args`` (at its smallest size with ``smoke``); its result lines
    are appended to ``out`` (default: ``data/benchmarks.jsonl``; none for a smoke run unless
    ``out`` is given). Raises ``Skipped`` for a smoke run that cannot happen here."""
    from benchmarks.results import record

    if name not in CASES:
        raise SystemExit(f"no case {name!r}; `python -m benchmarks list` names them")
    case = CASES[name]
    command = shlex.join(["python", "-m", "benchmarks", name, *args, *(["--smoke"] * smoke)])
    with tempfile.TemporaryDirectory(prefix=f"semmem-bench-{name}-") as tmp:
        ran, extra = (smoke_args(case, args, Path(tmp)) if smoke else (args, {}))
        with environment({**(env or {}), **extra}):
            figures, text = run_module(case, ran)
    sys.stdout.write(text)
    records = [record(name, command, f) for f in figures]
    target = out if out is not None else (None if smoke else RESULTS)
    if target is not None:
        target.parent.mkdir(parents=True, exist_ok=True)
        with target.open("a", encoding="utf-8") as f:
            for line in records:
                f.write(json.dumps(line) + "\n")
    return records
