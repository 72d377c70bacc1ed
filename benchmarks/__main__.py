"""The benchmarks' one entry.

    python -m benchmarks list                       # the cases, one line each
    python -m benchmarks NAME [options] [--out FILE] [--smoke]
    python -m benchmarks render [FILE] [--case NAME] [--last N]
    python -m benchmarks smoke [--commands FILE] [--report FILE] [--jobs N]

``NAME [options]`` runs one case (``python -m benchmarks NAME --help`` lists its options),
shows its table and appends its result lines (JSON: the case, the command, the commit, the
machine, the figures) to ``FILE`` (default ``data/benchmarks.jsonl``). ``--smoke`` runs it at
its smallest size (the sizes a command names are overridden; nothing recorded unless ``--out``
is given). ``render`` writes the Markdown tables of recorded results. ``smoke`` runs every case
(or each command of ``--commands``, JSON lines ``{"args": [...], "env": {...}}``) at its
smallest size in this one process (or ``--jobs N`` processes taking the next command as they
finish: the cases share one model load per process), and reports each one's outcome as a JSON
line.
"""

from __future__ import annotations

import json
import sys
import time
import traceback
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
if str(REPO) not in sys.path:  # the cases import semmem and tests.support from this checkout
    sys.path.insert(0, str(REPO))


def runner_options(argv: list[str]) -> tuple[list[str], bool, Path | None]:
    """The case's arguments, and the runner's own: ``--smoke`` and ``--out FILE``."""
    rest: list[str] = []
    smoke, out = False, None
    words = iter(argv)
    for word in words:
        if word == "--smoke":
            smoke = True
        elif word == "--out":
            out = Path(next(words))
        elif word.startswith("--out="):
            out = Path(word.split("=", 1)[1])
        else:
            rest.append(word)
    return rest, smoke, out


def smoke_all(argv: list[str]) -> int:
    """Every case, or every command given, at its smallest size; a JSON line per outcome."""
    from benchmarks.cases import CASES

    def option(name: str) -> str | None:
        return argv[argv.index(name) + 1] if name in argv else None

    commands_file, report = option("--commands"), option("--report")
    if commands_file is not None:
        commands = [json.loads(line) for line in Path(commands_file).read_text().splitlines()
                    if line.strip()]
    else:
        commands = [{"args": [name]} for name in CASES]
    jobs = int(option("--jobs") or 1)
    if jobs > 1:
        return smoke_jobs(commands, jobs, Path(report) if report else None)
    claims = option("--claims")
    return smoke_in_process(commands, Path(report) if report else None,
                            Path(claims) if claims else None)


def smoke_jobs(commands: list[dict[str, Any]], jobs: int, report: Path | None) -> int:
    """``commands`` shared by ``jobs`` smoke processes, each claiming the next one not taken
    (the long cases do not all land in one process); their reports joined into ``report``."""
    import subprocess
    import tempfile

    with tempfile.TemporaryDirectory(prefix="semmem-smoke-") as tmp:
        listed = Path(tmp) / "commands.jsonl"
        listed.write_text("".join(json.dumps(c) + "\n" for c in commands))
        (Path(tmp) / "claims").mkdir()
        workers = [subprocess.Popen([sys.executable, "-m", "benchmarks", "smoke", "--commands",
                                     str(listed), "--report", str(Path(tmp) / f"report-{i}"),
                                     "--claims", str(Path(tmp) / "claims")], cwd=REPO)
                   for i in range(jobs)]
        codes = [worker.wait() for worker in workers]
        lines = [line for i in range(jobs) if (Path(tmp) / f"report-{i}").exists()
                 for line in (Path(tmp) / f"report-{i}").read_text().splitlines()]
    if report is not None:
        with report.open("a", encoding="utf-8") as f:
            f.writelines(line + "\n" for line in lines)
    return max(codes)


def smoke_in_process(commands: list[dict[str, Any]], report: Path | None,
                     claims: Path | None) -> int:
    """Run ``commands`` here, one after another (with ``claims``, only those no other process
    has claimed: a claim is a file created exclusively); each outcome a JSON line."""
    from benchmarks.runner import Skipped, run

    failed = 0
    for i, command in enumerate(commands):
        if claims is not None:
            try:
                (claims / str(i)).touch(exist_ok=False)
            except FileExistsError:
                continue
        name, *args = command["args"]
        args, _, _ = runner_options(args)
        started = time.perf_counter()
        outcome: dict[str, object] = {"args": command["args"]}
        try:
            run(name, args, smoke=True, env=command.get("env"))
            outcome["status"] = "ok"
        except Skipped as skip:
            outcome.update(status="skipped", reason=str(skip))
        except (Exception, SystemExit) as error:
            failed += 1
            outcome.update(status="failed", error=f"{error!r}\n{traceback.format_exc()[-3000:]}")
        outcome["seconds"] = round(time.perf_counter() - started, 1)
        line = json.dumps(outcome)
        print(line, file=sys.stderr, flush=True)
        if report is not None:
            with report.open("a", encoding="utf-8") as f:
                f.write(line + "\n")
    return 1 if failed else 0


def main(argv: list[str]) -> int:
    """Dispatch to the listing, the renderer, the smoke run or a case."""
    if not argv or argv[0] in ("-h", "--help"):
        print(__doc__)
        return 0
    if argv[0] == "list":
        from benchmarks.cases import CASES

        width = max(map(len, CASES))
        for case in CASES.values():
            extra = f" [reads {case.data}]" if case.data else ""
            print(f"{case.name:<{width}}  {case.about}{extra}")
        return 0
    if argv[0] == "render":
        from benchmarks.render import main as render

        return render(argv[1:])
    if argv[0] == "smoke":
        return smoke_all(argv[1:])
    from benchmarks.runner import Skipped, run

    args, smoke, out = runner_options(argv[1:])
    try:
        run(argv[0], args, smoke=smoke, out=out)
    except Skipped as skip:
        print(f"skipped: {skip}", file=sys.stderr)
        return 0
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
