"""The README and docs run as written: every token they show is one the server accepts (16
bytes or more), and the README's walk-through — its start line, the curl session and its
printed answers, the Python snippets — runs against a real server with the bundled model (the
recall's claim is about ranking), each answer matching what the README prints."""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

import httpx
import psutil
import pytest

from tests.support.server import REPO, free_port

DOCS = [REPO / "README.md", REPO / "clients" / "python" / "README.md",
        *sorted((REPO / "docs").glob("*.md"))]
BIN = Path(sys.executable).parent
TIMESTAMP = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z")
MIN_TOKEN_BYTES = 16


def fenced(path: Path, language: str) -> list[str]:
    """The fenced blocks of ``language`` in a Markdown file, in order."""
    text = path.read_text(encoding="utf-8")
    return re.findall(rf"^```{language}\n(.*?)^```", text, re.M | re.S)


def block_with(path: Path, language: str, needle: str) -> str:
    """The one ``language`` block of ``path`` that holds ``needle``."""
    [block] = [b for b in fenced(path, language) if needle in b]
    return block


def shown_tokens(text: str) -> list[str]:
    """Every literal token a doc shows: in SEMMEM_TOKENS=/SEMMEM_ADMIN_TOKENS=/TOKEN=
    assignments, ``Bearer`` headers and a ``Client(url, token)`` call (placeholders such as
    ``<token>``, ``q9Lm…`` and generated ``$(…)`` values are not literal)."""
    found: list[str] = []
    for value in re.findall(r"\b(?:SEMMEM_(?:ADMIN_)?TOKENS|TOKEN)=(\S+)", text):
        found.extend(value.strip("\"'`").split(","))
    found += re.findall(r"Bearer (?!realm=)([^\s\"'`]+)", text)
    found += re.findall(r"Client\(\"https?://[^\"]+\", \"([^\"]+)\"", text)
    return [t for t in found if t and not re.search(r"[<$…]", t)]


def test_every_token_in_the_docs_is_long_enough() -> None:
    """A reader who copies a command gets a server that starts: tokens under 16 bytes stop
    ``semmem serve``. The scan sees the tokens it checks (positive control)."""
    seen = {str(doc.relative_to(REPO)): shown_tokens(doc.read_text(encoding="utf-8"))
            for doc in DOCS}
    assert "local-dev-token-0001" in seen["README.md"]
    assert len(shown_tokens("SEMMEM_TOKENS=tok1,tok2 TOKEN=s3cret-token")) == 3
    short = {doc: [t for t in tokens if len(t.encode()) < MIN_TOKEN_BYTES]
             for doc, tokens in seen.items()}
    assert not {doc: tokens for doc, tokens in short.items() if tokens}


def start(line: str, cwd: Path, log: Path) -> tuple[subprocess.Popen[bytes], str]:
    """Run a doc's ``semmem serve`` line as written, but on a free port (``--port 8080``
    replaced, else ``SEMMEM_PORT`` set, which a line without ``--port`` leaves alone), with
    this venv's ``semmem``; wait until ready. Returns the process and its base URL."""
    port = free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith("SEMMEM_")}
    env.update({"SEMMEM_PORT": str(port), "SEMMEM_DATA": str(cwd / "semmem-data"),
                "PATH": f"{BIN}:{env.get('PATH', '')}",
                "PYTHONPATH": str(REPO)})
    command = line.replace(".venv/bin/", f"{BIN}/").replace("--port 8080", f"--port {port}")
    with log.open("wb") as sink:
        proc = subprocess.Popen(["bash", "-c", command], cwd=cwd, env=env, stdout=sink,
                                stderr=subprocess.STDOUT, start_new_session=True)
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 120
    with httpx.Client(timeout=5) as c:
        while True:
            assert proc.poll() is None, log.read_text()
            try:
                if c.get(url + "/readyz").status_code == 200:
                    return proc, url
            except httpx.TransportError:
                pass
            assert time.monotonic() < deadline, log.read_text()
            time.sleep(0.1)


def stop(proc: subprocess.Popen[bytes]) -> None:
    """SIGTERM to the line's whole process group (a pipeline too), then wait."""
    os.killpg(proc.pid, signal.SIGTERM)
    proc.wait(15)


@dataclass
class Walk:
    """The README walked top to bottom in one directory: its CLI lines (as README orders them)
    on the store its server line then serves; what each line answered."""

    where: Path
    url: str
    token: str
    ran: list[tuple[list[str], str]]


def _run_cli_lines(lines: list[list[str]], where: Path) -> list[tuple[list[str], str]]:
    """Run ``semmem`` lines in order in ``where`` (its ``semmem-data``), each exiting 0; a
    backup's ``ID`` (``"$ID"``) is the one ``backup create`` printed. Returns each line and its
    output."""
    from typer.testing import CliRunner

    from semmem.cli.commands import app

    runner = CliRunner()
    env = {"SEMMEM_DATA": str(where / "semmem-data")}
    backup, ran = "ID", []
    before = Path.cwd()
    os.chdir(where)
    try:
        for args in lines:
            args = [backup if a in ("ID", "$ID") else a for a in args]
            result = runner.invoke(app, args, env=env)
            assert result.exit_code == 0, (args, result.stdout, result.stderr)
            if args[:2] == ["backup", "create"]:
                backup = json.loads(result.stdout.strip().splitlines()[-1])["id"]
            ran.append((args, result.stdout))
    finally:
        os.chdir(before)
    assert backup != "ID" or not any(args[:2] == ["backup", "create"] for args in lines)
    return ran


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Walk]:
    """The README in order on one store: its ``semmem`` lines (command line, retention,
    backups), then ``semmem serve`` started by its own line on the same directory."""
    where = tmp_path_factory.mktemp("readme")
    shutil.copytree(REPO / "docs" / "examples", where / "docs" / "examples")  # ingest's input
    ran = _run_cli_lines(_cli_lines(REPO / "README.md", ".venv/bin/semmem "), where)
    line = block_with(REPO / "README.md", "sh", "semmem serve      #").strip()
    token = re.search(r"SEMMEM_TOKENS=(\S+)", line)
    assert token is not None
    proc, url = start(line, where, where.parent / "serve.log")
    try:
        yield Walk(where, url, token.group(1), ran)
    finally:
        stop(proc)


@pytest.mark.model
@pytest.mark.parametrize(("doc", "needle"), [("http.md", "semmem serve --host"),
                                             ("console.md", "SEMMEM_ADMIN_TOKENS="),
                                             ("../README.md", "SEMMEM_ADMIN_TOKENS=")])
def test_docs_serve_lines_start_a_server(tmp_path: Path, doc: str, needle: str) -> None:
    """The start lines of docs/http.md, docs/console.md and the README's console section
    start a server that takes their token (and the console, signed out, answers its sign-in
    page)."""
    [line] = [ln for ln in block_with(REPO / "docs" / doc, "sh", needle).splitlines()
              if needle in ln]
    token = re.search(r"SEMMEM_TOKENS=([^\s,]+)", line)
    assert token is not None
    proc, url = start(line, tmp_path, tmp_path / "serve.log")
    try:
        with httpx.Client(base_url=url, timeout=10) as c:
            answer = c.post("/memory", json={}, headers={
                "Authorization": f"Bearer {token.group(1)}"})
            assert answer.status_code == 400  # past the token: the empty envelope refused
            if "ADMIN" in needle:
                assert c.get("/console/signin").status_code == 200
    finally:
        stop(proc)


@pytest.mark.model
@pytest.mark.parametrize(("needle", "shows"), [
    ("OTEL_TRACES_EXPORTER=console", '"name": "search_memory"'),
    ("SEMMEM_LOG_FORMAT=json", '"route":"/memory"'),
])
def test_operating_serve_lines_show_spans_and_access_fields(tmp_path: Path, needle: str,
                                                            shows: str) -> None:
    """docs/operating.md's console-traces line prints a recall's span; its JSON-logs line,
    through jq as written, prints access lines with their fields."""
    [line] = [ln for block in fenced(REPO / "docs" / "operating.md", "sh")
              for ln in block.splitlines() if ln.startswith(needle)]
    log = tmp_path / "serve.log"
    proc, url = start(line.split("  #")[0], tmp_path, log)
    try:
        token = (tmp_path / "semmem-data" / "generated-token").read_text().strip()
        body = {"version": 1, "operationId": "docs-1", "partition": "p", "access": "read",
                "deadlineAt": (datetime.now(UTC) + timedelta(seconds=10)).isoformat(),
                "operation": "recall", "input": {"text": "hello"}, "maxBytes": 100}
        with httpx.Client(base_url=url, timeout=10) as c:
            answer = c.post("/memory", json=body, headers={"Authorization": f"Bearer {token}"})
        assert answer.status_code == 200, answer.text
        # The server first, so jq (block-buffered into the file) meets the end and flushes.
        line_shell = psutil.Process(proc.pid)
        for process in (line_shell, *line_shell.children(recursive=True)):
            if process.name() not in ("jq", "bash"):
                process.terminate()
        proc.wait(30)
        assert shows in log.read_text(), log.read_text()[-2000:]
    finally:
        if proc.poll() is None:
            stop(proc)


def _session(block: str) -> list[tuple[str, str]]:
    """The ``$ command`` lines of a README session block and what each printed."""
    steps: list[tuple[str, str]] = []
    for chunk in block.split("$ ")[1:]:
        command, _, printed = chunk.partition("\n")
        steps.append((command, printed.strip()))
    return steps


def _run_session(url: str, setup: str, steps: list[tuple[str, str]]) -> list[str]:
    script = setup.replace("http://127.0.0.1:8080", url)
    script += "".join(f"\n{command}\necho '<<end>>'" for command, _ in steps)
    out = subprocess.run(["bash", "-c", script], capture_output=True, text=True, check=True,
                         timeout=120).stdout
    return [answer.strip() for answer in out.split("<<end>>")[:-1]]


@pytest.mark.model
def test_readme_curl_session_prints_what_the_readme_shows(served: Walk) -> None:
    """The walk-through's `memory` calls, on the server the README's command lines ran
    before, answer byte for byte what the README prints (times aside), the recall's ranking
    included; the hint example runs in alice's memory as it stood after call-3 (a partition of
    its own here, as the README says)."""
    url = served.url
    readme = REPO / "README.md"
    setup = block_with(readme, "sh", "memory() {")
    steps = _session(block_with(readme, "text", "memory req-2"))
    assert len(steps) == 11 and steps[3][0].startswith("memory req-1")
    got = _run_session(url, setup, steps)
    for (command, shown), answer in zip(steps, got, strict=True):
        assert TIMESTAMP.sub("<t>", answer) == TIMESTAMP.sub("<t>", shown), command

    hint = _session(block_with(readme, "text", "memory call-8"))
    alone = setup.replace('\\"partition\\":\\"alice\\"', '\\"partition\\":\\"alice-hints\\"')
    assert alone != setup
    answers = _run_session(url, alone, steps[:3] + hint)
    assert TIMESTAMP.sub("<t>", answers[-1]) == TIMESTAMP.sub("<t>", hint[0][1])


def _printed_comments(code: str) -> list[str]:
    """What a snippet's ``print`` lines say they print (their trailing ``# …`` comments)."""
    return [line.split("# ", 1)[1].strip() for line in code.splitlines()
            if "print(" in line and "# " in line]


@pytest.mark.model
@pytest.mark.parametrize(("doc", "needle"), [
    ("README.md", "Suggest a recipe"),
    ("clients/python/README.md", "Prefers metric units"),
])
def test_python_snippets_print_what_their_comments_say(served: Walk, doc: str,
                                                        needle: str) -> None:
    """The README's Python walk-through, then the client README's five lines, run as written
    on the server the walk-throughs before them used, print what their comments show."""
    code = block_with(REPO / doc, "python", needle)
    assert f'"{served.token}"' in code and "http://127.0.0.1:8080" in code
    script = code.replace("http://127.0.0.1:8080", served.url)
    env = {**os.environ, "PYTHONPATH": str(REPO / "clients" / "python" / "src")}
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                         check=True, env=env, timeout=60).stdout
    assert out.splitlines() == _printed_comments(code)


@pytest.mark.model
def test_readme_cli_lines_do_what_they_say(served: Walk) -> None:
    """The command-line walk-through keeps a fact to export: carol's export holds fact 1 as
    updated (fact 2 forgotten), and dave's import brings it in."""
    exported = [json.loads(line) for line in
                (served.where / "carol.jsonl").read_text(encoding="utf-8").splitlines()]
    assert [(r["n"], r["text"]) for r in exported] == [(1, "Prefers SI units")]
    [imported] = [out for args, out in served.ran if args[:3] == ["import", "-p", "dave"]]
    assert json.loads(imported)["imported"] == 1, imported


@pytest.mark.model
def test_readme_walkthroughs_leave_only_git_ignored_files(served: Walk) -> None:
    """What the walk-throughs wrote in the working directory (the store, the export, backups,
    the restored store) is ignored by git; the check sees them (positive control)."""
    written = sorted(p.name + ("/" if p.is_dir() else "") for p in served.where.iterdir()
                     if p.name != "docs")  # the test's copy of the ingest example, not written
    assert {"semmem-data/", "carol.jsonl", "backups/", "restored-data/"} <= set(written)
    ignored = subprocess.run(["git", "check-ignore", *written], cwd=REPO, capture_output=True,
                             text=True).stdout.split()
    assert ignored == written


def _cli_lines(path: Path, prefix: str) -> list[list[str]]:
    """The ``semmem`` command lines of a doc's ``sh`` blocks, as argument lists."""
    return [shlex.split(line, comments=True)[1:] for block in fenced(path, "sh")
            for line in block.splitlines() if line.startswith(prefix)]


@pytest.mark.model
def test_reliability_cli_lines_run(tmp_path: Path) -> None:
    """docs/reliability.md's check and backup lines run in order in one directory and exit 0
    (its ``/backups`` a folder here), after the README's own lines made a store there."""
    lines = _cli_lines(REPO / "README.md", ".venv/bin/semmem ")
    lines += [[a.replace("/backups", "backups") for a in args]
              for args in _cli_lines(REPO / "docs" / "reliability.md", "semmem ")]
    assert len(lines) > 20 and ["check"] in lines
    shutil.copytree(REPO / "docs" / "examples", tmp_path / "docs" / "examples")  # ingest's input
    _run_cli_lines(lines, tmp_path)


def test_notebook_outputs_default_to_a_git_ignored_folder() -> None:
    """What the tuning notebooks write by default (the chosen file, its plots beside it) goes
    to ``notebooks/out/``, which git ignores; the docs' nbconvert commands put the executed
    copies there too."""
    defaults = {}
    for name in ("tune_ranking", "tune_similar"):
        book = json.loads((REPO / "notebooks" / f"{name}.ipynb").read_text(encoding="utf-8"))
        code = "".join("".join(c["source"]) for c in book["cells"] if c["cell_type"] == "code")
        found = re.search(r'OUTPUT = Path\(os\.environ\.get\("SEMMEM_TUNE_OUTPUT", ROOT((?: / '
                          r'"[^"]+")+)\)\)', code)
        assert found is not None, name
        defaults[name] = "/".join(re.findall(r'"([^"]+)"', found.group(1)))
    assert defaults == {"tune_ranking": "notebooks/out/ranking.json",
                        "tune_similar": "notebooks/out/similar.json"}
    paths = [*defaults.values(), "notebooks/out/ranking.packing.png"]
    ignored = subprocess.run(["git", "check-ignore", *paths], cwd=REPO, capture_output=True,
                             text=True).stdout.split()
    assert ignored == paths
    commands = [c for doc in ("ranking.md", "consolidation.md")
                for c in re.findall(r"jupyter nbconvert[^`]*", " ".join(
                    (REPO / "docs" / doc).read_text(encoding="utf-8").split()))]
    assert len(commands) == 2 and all("--output-dir notebooks/out" in c for c in commands)


@pytest.mark.model
def test_records_cli_lines_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """docs/records.md's owner commands run as written on a memory with facts 3 and 4 and a
    map of records (what the page assumes), each exiting 0 and doing what it says."""
    from typer.testing import CliRunner

    from semmem.cli.commands import app

    lines = _cli_lines(REPO / "docs" / "records.md", "semmem ")
    assert [args[0] for args in lines] == ["update", "update", "merge", "import"]
    monkeypatch.chdir(tmp_path)
    (tmp_path / "records.json").write_text(json.dumps(
        {"tea": {"label": "Drinks green tea", "why": "asked twice"}}))
    runner = CliRunner()
    env = {"SEMMEM_DATA": str(tmp_path / "semmem-data")}
    for text in ("Lives in Rome", "Speaks Greek", "Had a Python bug in 2020", "Had a bug"):
        assert runner.invoke(app, ["remember", text, "-p", "alice"], env=env).exit_code == 0
    for args in lines:
        result = runner.invoke(app, args, env=env)
        assert result.exit_code == 0, (args, result.stdout, result.stderr)
    exported = runner.invoke(app, ["export", "-p", "alice"], env=env).stdout
    records = {r["n"]: r for r in map(json.loads, exported.splitlines())}
    assert (records[3]["note"], records[3]["status"], records[3]["surfacing"]) == (
        "resolved in 2021", "inactive", "hold")
    assert records[4]["mergedInto"] == 3
    assert records[5]["slug"] == "tea" and records[5]["note"] == "asked twice"


def test_docs_commands_name_files_and_flags_that_exist() -> None:
    """The long-running commands the docs show (benchmarks, soak and load runs, test files,
    set-up scripts), not run here, name files that exist, and benchmark cases and flags the
    runner accepts (tests/test_benchmark_docs.py runs docs/benchmarks.md's at their smallest
    size)."""
    named: list[tuple[str, list[str]]] = []
    for doc in DOCS:
        for block in fenced(doc, "sh"):
            for line in block.replace("\\\n", " ").splitlines():
                for path in re.findall(r"(?:benchmarks|scripts|tests)/[\w/.-]+", line):
                    named.append((path, []))
                for case in re.findall(r"-m benchmarks (\w+)", line):
                    named.append((f"benchmarks {case}", re.findall(r"--[\w-]+", line)))
    assert ("benchmarks recall",
            ["--served", "--sizes", "--reps", "--remembers", "--max-bytes"]) in named
    for path, flags in named:
        if not path.startswith("benchmarks "):
            assert (REPO / path).is_file(), path
        elif path.split()[1] not in ("list", "render", "smoke"):
            usage = subprocess.run([sys.executable, "-m", *path.split(), "--help"], cwd=REPO,
                                   capture_output=True, text=True, check=True,
                                   env={**os.environ, "PYTHONPATH": str(REPO)}).stdout
            assert all(flag in usage for flag in flags if flag not in ("--smoke", "--out")), (
                path, flags)


def test_http_errors_table_lists_every_status_the_server_answers() -> None:
    """docs/http.md's table has a row for every status an error can answer: the status
    table's and Starlette's own (404 unknown route, 405 wrong method, e.g. `GET /memory`)."""
    from semmem.protocol.status import STATUS

    table = (REPO / "docs" / "http.md").read_text(encoding="utf-8").split("## Errors")[1]
    rows = {int(m) for m in re.findall(r"^\| (\d{3}) \|", table, re.M)}
    assert 422 in rows  # the scan sees the table (positive control)
    assert {*STATUS.values(), 404, 405, 500} <= rows


# A folder of one machine: its home folders, a root's, this project's work trees and scratch.
# Spelled with classes so that this file does not hold what it looks for.
MACHINE_PATH = re.compile(r"(?<![\w.~$-])/(?:[w]ork|[f]arm|[r]oot|tmp/[w]|[h]ome/(?!semmem\b)"
                          r"[\w.-]+|[U]sers/[\w.-]+)(?=/|\b)")


def machine_paths(text: str) -> list[str]:
    """The absolute paths of one machine that ``text`` holds (the image's own user,
    /home/semmem in the Dockerfile, is the image's, not a machine's)."""
    return MACHINE_PATH.findall(text)


def test_no_tracked_file_names_a_folder_of_one_machine() -> None:
    """Every command in the repository runs from a clone: no tracked file names a folder that
    exists on one machine only (data sets are arguments or variables, scratch under $TMPDIR)."""
    planted = "--dataset " + "/" + "work/shared/data/x, " + "/" + "home/alice/y and /" + "root/z"
    assert len(machine_paths(planted)) == 3  # the scan sees them (positive control)
    assert machine_paths("/usr/bin/chromium /etc/hosts /home/semmem /var/lib/semmem "
                         "${TMPDIR:-/tmp}/semmem-bench ../h29-base /path/to/semmem") == []
    tracked = subprocess.run(["git", "ls-files", "-z"], cwd=REPO, capture_output=True,
                             check=True).stdout.decode().split("\0")
    found = {}
    for name in filter(None, tracked):
        path = REPO / name
        if not path.is_file() or path.suffix in (".png", ".bin", ".onnx"):
            continue
        hits = machine_paths(path.read_text(encoding="utf-8", errors="replace"))
        if hits:
            found[name] = sorted(set(hits))
    assert len(tracked) > 100 and found == {}


def test_readme_serve_line_says_to_stop_make_run_and_which_token_it_sets() -> None:
    """The walk-through's server wants make run's port, and its token is not the one make run
    generated: the README says both before the line."""
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    line = block_with(REPO / "README.md", "sh", "semmem serve      #").strip()
    before = readme[:readme.index(line)].rsplit("```", 2)[-2]  # the prose since the last block
    assert "SEMMEM_TOKENS=local-dev-token-0001" in line  # the line it is about
    assert "Stop `make run` first" in before and "8080" in before
    assert "`local-dev-token-0001`" in before and "generated-token" in before


@pytest.mark.model
def test_readme_backup_id_line_gives_the_newest_backup(served: Walk) -> None:
    """The backups block's ``ID=$(…)`` runs in a shell as written and names the backup its
    ``backup create`` made (the ``ID`` placeholder was taken literally: "no backup 'ID'")."""
    block = block_with(REPO / "README.md", "sh", "backup verify")
    [line] = [x for x in block.splitlines() if x.startswith("ID=$(")]
    [created] = [json.loads(out.strip().splitlines()[-1])["id"] for args, out in served.ran
                 if args[:2] == ["backup", "create"]]
    env = {k: v for k, v in os.environ.items() if not k.startswith("SEMMEM_")}
    env.update({"PYTHONPATH": str(REPO), "SEMMEM_DATA": str(served.where / "semmem-data")})
    out = subprocess.run(["bash", "-c", line.replace(".venv/bin/", f"{BIN}/") + '\necho "$ID"'],
                         cwd=served.where, env=env, capture_output=True, text=True, check=True,
                         timeout=120).stdout
    assert out.strip() == created
    assert all('"$ID"' in x for x in block.splitlines() if "verify" in x or "restore" in x)


@pytest.mark.model
@pytest.mark.slow
def test_readme_tuning_lines_go_from_a_store_to_a_served_ranking(tmp_path: Path) -> None:
    """The README's "Tuning ranking" runs as written in a clone whose store holds the command
    line walk-through's facts: carol's export and two labelled questions, the tuning notebook
    headless (on the test venv's nbconvert: `make notebooks` is that set-up, checked by
    tests/test_packaging.py), then `semmem serve --ranking` on the file it wrote."""
    from semmem.ranking.ranker import RankingConfig

    clone = tmp_path / "clone"
    (clone / "notebooks").mkdir(parents=True)
    for name in ("semmem", "pyproject.toml", "models"):  # what the notebook knows a clone by
        (clone / name).symlink_to(REPO / name)
    shutil.copy(REPO / "notebooks" / "tune_ranking.ipynb", clone / "notebooks")
    commands = block_with(REPO / "README.md", "sh", "tune_ranking.ipynb")
    _run_cli_lines(_cli_lines(REPO / "README.md", ".venv/bin/semmem ")[:6], clone)
    lines = [line for line in commands.splitlines() if line.strip()]
    assert len(lines) == 5 and lines[0].startswith("make notebooks")
    env = {k: v for k, v in os.environ.items() if not k.startswith("SEMMEM_")}
    env.update({"PYTHONPATH": str(REPO), "SEMMEM_DATA": str(clone / "semmem-data"),
                "SEMMEM_EVAL_CACHE": str(tmp_path / "cache"), "PATH": f"{BIN}:{env['PATH']}"})
    script = "set -e\n" + "\n".join(lines[1:4]).replace(".venv/bin/", f"{BIN}/")
    done = subprocess.run(["bash", "-c", script], cwd=clone, env=env, capture_output=True,
                          text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    chosen = RankingConfig.from_file(clone / "notebooks" / "out" / "ranking.json")
    # Two questions: nothing beats the defaults, and too few to refit the relevance model on,
    # so the defaults are written, and the notebook says both (issue 62, item 2).
    assert chosen == RankingConfig()
    book = (clone / "notebooks" / "out" / "tune_ranking.ipynb").read_text()
    for said in ("2 labelled questions (1 with facts to recall, 1 that should recall nothing)",
                 "relevance model not refitted: the fit needs at least 20 questions",
                 "nothing beat the defaults (objective 100.00, defaults 100.00)"):
        assert said in book, said
    assert "serve --ranking notebooks/out/ranking.json" in lines[4]
    proc, url = start(lines[4], clone, tmp_path / "serve.log")
    try:
        with httpx.Client(timeout=30) as c:
            ready = c.get(url + "/readyz").json()
        assert ready["status"] == "ready"
        assert ready["ranking"] == {"file": "notebooks/out/ranking.json", "changed": {}}
    finally:
        stop(proc)


def test_readme_hint_example_says_which_model_it_holds_for() -> None:
    """The `similar` example's score and listing are the default model's: the README says so
    (under the multilingual model the same write scores otherwise)."""
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    block = block_with(REPO / "README.md", "text", "memory call-8")
    before = readme[:readme.index(block)].rsplit("```", 2)[-2]
    assert '"score":0.4763' in block  # the example it is about
    assert "all-MiniLM-L6-v2" in before and "multilingual" in before
