"""``semmem ingest`` and ``semmem sessions`` as subprocesses over a real store (the bundled
model): a JSONL of messages in, sessions listed and shown; pieces survive export and import
with their record fields, pass ``semmem check`` and are forgotten by a delete by filter."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from tests.support.server import REPO

LINES = [
    {"sessionId": "s1", "role": "user", "content": "I just got an Air Fryer. It makes crispy "
     "chickpeas in twelve minutes. I also roast broccoli in it.", "at": "2023-05-20T10:00:00Z"},
    {"sessionId": "s1", "role": "assistant", "content": "Enjoy it!", "at": "2023-05-20T10:01:00Z"},
    {"sessionId": "s2", "role": "user", "content": "Book a window seat to Oslo.",
     "at": "2023-06-01T08:00:00Z"},
    {"sessionId": "s2", "role": "user", "content": "Enjoy it!", "at": "2023-06-01T08:05:00Z"},
]


def cli(data: Path, *args: str, stdin: str | None = None, ok: bool = True) -> Any:
    env = {k: v for k, v in os.environ.items() if not k.startswith("SEMMEM_")}
    done = subprocess.run([sys.executable, "-m", "semmem.cli", *args], cwd=REPO,
                          env={**env, "SEMMEM_DATA": str(data)}, input=stdin,
                          capture_output=True, text=True, timeout=300)
    if not ok:
        return done
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout) if done.stdout.strip().startswith(("{", "[")) \
        else done.stdout


def test_ingest_a_jsonl_then_list_show_export_import_check_and_forget(tmp_path: Path) -> None:
    data = tmp_path / "db"
    source = tmp_path / "messages.jsonl"
    source.write_text("".join(json.dumps(line) + "\n" for line in LINES))
    first = cli(data, "ingest", "-p", "alice", str(source))
    assert first == {"sessions": 2, "messages": 4, "pieces": 4, "count": 4}
    again = cli(data, "ingest", "-p", "alice", str(source))  # nothing stored twice
    assert again["count"] == first["count"]
    listed = cli(data, "sessions", "list", "-p", "alice")
    assert [s["sessionId"] for s in listed] == ["s2", "s1"]
    shown = cli(data, "sessions", "show", "s1", "-p", "alice")
    assert [m["role"] for m in shown["messages"]] == ["user", "assistant"]
    assert shown["messages"][0]["at"] == "2023-05-20T10:00:00.000Z"

    export = tmp_path / "alice.jsonl"
    cli(data, "export", "-p", "alice", "-o", str(export))
    records = [json.loads(line) for line in export.read_text().splitlines()]
    assert all(r["keyed"]["space"] == "session" and r["piece"]["role"] for r in records)
    assert {r["ts"] for r in records if r["keyed"]["key"] == "s2"} == {
        "2023-06-01T08:00:00.000Z", "2023-06-01T08:05:00.000Z"}
    # "Enjoy it!" is said in both sessions: two pieces, both imported
    imported = cli(data, "import", "-p", "bob", str(export))
    assert imported["imported"] == len(records) and imported["duplicates"] == 0
    assert cli(data, "import", "-p", "bob", str(export))["duplicates"] == len(records)
    assert cli(data, "sessions", "show", "s1", "-p", "bob")["messages"] == shown["messages"]
    again_bob = cli(data, "ingest", "-p", "bob", str(source))  # known by role and texts
    assert again_bob["count"] == len(records)
    check = cli(data, "check", "-p", "bob", ok=False)
    assert check.returncode == 0, check.stdout + check.stderr

    refused = cli(data, "sessions", "forget", "s1", "-p", "alice", ok=False)
    assert refused.returncode == 1 and "--yes" in refused.stderr
    gone = cli(data, "sessions", "forget", "s1", "-p", "alice", "--yes")
    assert len(gone["forgotten"]) == len(shown["messages"][0]["items"]) + 1
    assert [s["sessionId"] for s in cli(data, "sessions", "list", "-p", "alice")] == ["s2"]
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"sessionId": "s", "role": "user", "content": "hi", "at": "soon"}\n')
    done = cli(data, "ingest", "-p", "alice", str(bad), ok=False)
    assert done.returncode == 1 and "bad.jsonl:1" in done.stderr and done.stdout == ""


def test_ingest_reads_a_raw_u2028_as_text_and_refuses_a_time_out_of_range(
        tmp_path: Path) -> None:
    """A raw U+2028 inside a string is valid JSON (``semmem import`` reads it; ``ingest`` split
    its lines with ``str.splitlines``); a time in year 0 in UTC is refused at its line by the
    one rule of times, before anything is written (it failed in the write: "year 0 is out of
    range")."""
    data = tmp_path / "db"
    source = tmp_path / "messages.jsonl"
    said = {"sessionId": "s1", "role": "user", "content": "One line\u2028and the next.",
            "at": "2023-05-20T10:00:00Z"}
    line = json.dumps(said, ensure_ascii=False)
    assert "\u2028" in line  # raw, as a file written elsewhere may hold it
    source.write_text(line + "\n", encoding="utf-8")
    assert cli(data, "ingest", "-p", "alice", str(source))["messages"] == 1
    shown = cli(data, "sessions", "show", "s1", "-p", "alice")
    assert shown["messages"][0]["items"][0]["text"] == "One line\u2028and the next."
    for at in ("0001-01-01T00:00:00+01:00", "9999-12-31T23:59:59-01:00"):
        source.write_text(json.dumps({**said, "content": "later", "at": at}) + "\n")
        done = cli(data, "ingest", "-p", "alice", str(source), ok=False)
        assert done.returncode != 0, done.stdout
        assert (f"{source}:1: message.at must be an ISO 8601 date-time from "
                "0001-01-01T00:00:00Z to 9999-12-31T23:59:59Z") in done.stderr, done.stderr
    assert cli(data, "sessions", "list", "-p", "alice")[0]["messages"] == 1
