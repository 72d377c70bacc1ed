"""The Markdown tables of recorded results (``python -m benchmarks render``).

Each result line holds the case, its command, the commit, the machine and the figures; the
tables of docs/benchmarks.md are written from them: a case's own ``table(figures)`` where it
has one, else its scalar figures as columns (or, for a case that prints its own table, that
output). Each table is preceded by its command and followed by where it ran.
"""

from __future__ import annotations

import argparse
import importlib
import json
import sys
from pathlib import Path
from typing import Any

from benchmarks.runner import RESULTS


def results(path: Path) -> list[dict[str, Any]]:
    """The result lines of ``path`` (other lines, such as a case's own text, are skipped)."""
    out = []
    for line in path.read_text(encoding="utf-8").splitlines():
        try:
            value = json.loads(line)
        except ValueError:
            continue
        if isinstance(value, dict) and {"case", "command", "figures"} <= value.keys():
            out.append(value)
    return out


def cell(value: Any) -> str:
    """A figure as a table cell."""
    if isinstance(value, float):
        return f"{value:.2f}" if abs(value) < 100 else f"{value:.0f}"
    if isinstance(value, list) and all(isinstance(v, int | float) for v in value):
        return " / ".join(cell(float(v)) for v in value)
    return str(value)


def generic(figures: list[dict[str, Any]]) -> str:
    """The scalar figures as columns, one row per result; a case's own output as it is."""
    if all("output" in f for f in figures):
        return "\n".join("\n".join(f["output"]) for f in figures)
    keys: list[str] = []
    for f in figures:
        keys += [k for k, v in f.items() if not isinstance(v, dict) and k not in keys]
    lines = ["| " + " | ".join(keys) + " |", "|" + " --- |" * len(keys)]
    lines += ["| " + " | ".join(cell(f.get(k, "")) for k in keys) + " |" for f in figures]
    return "\n".join(lines)


def tables(lines: list[dict[str, Any]]) -> str:
    """One table per command run, in the order recorded."""
    groups: dict[tuple[str, str, str], list[dict[str, Any]]] = {}
    for line in lines:
        groups.setdefault((line["case"], line["command"], line.get("at", "")), []).append(line)
    out = []
    for (case, command, at), group in groups.items():
        module = importlib.import_module(f"benchmarks.cases.{case}")
        figures = [g["figures"] for g in group]
        body = module.table(figures) if hasattr(module, "table") else generic(figures)
        m = group[0].get("machine", {})
        where = (f"{at}, commit `{group[0].get('commit', '?')}`, {m.get('cores')} cores, "
                 f"{m.get('memory_gb')} GB, {m.get('cpu')}, load {m.get('load')}")
        out.append(f"`.venv/bin/{command}` ({where}):\n\n{body}\n")
    return "\n".join(out)


def main(argv: list[str]) -> int:
    """Print the tables of a results file."""
    parser = argparse.ArgumentParser(prog="python -m benchmarks render")
    parser.add_argument("file", nargs="?", type=Path, default=RESULTS)
    parser.add_argument("--case", default=None, help="only this case's results")
    parser.add_argument("--last", type=int, default=None, help="only the last N results")
    args = parser.parse_args(argv)
    if not args.file.exists():
        print(f"no results in {args.file} yet: a case's run appends them", file=sys.stderr)
        return 0
    lines = [r for r in results(args.file) if args.case in (None, r["case"])]
    print(tables(lines[-args.last:] if args.last else lines), end="")
    return 0
