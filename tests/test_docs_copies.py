"""What docs/operating.md and docs/security.md say of copies runs as written (issue 60): the
backup and restore lines (with and without the live store as ledger) and the whole-history
re-send after them, a backup of a later format restored, and `semmem reindex` beside a running
`semmem serve`, then `semmem check` and a server under the new model. Each line runs in bash in
a scratch folder with this venv's `semmem`, as a user types it, and each thing its comment or
the prose beside it says is checked. The bundled model is the CLI's own (the re-send's claim is
about what it stores, not ranking); the reindex goes to the second bundled model."""

from __future__ import annotations

import asyncio
import json
import os
import re
import shutil
import subprocess
from dataclasses import replace
from pathlib import Path

import httpx
import pytest

from semmem.lifecycle.backup import load_manifest
from semmem.lifecycle.backup_format import manifest_name
from semmem.store.copies.objects import Objects
from semmem.store.formats import FORMAT
from semmem.store.tables import Store
from tests.support.files import decoded_with, files_with
from tests.support.server import REPO, free_port
from tests.support.web import result_of, send_as, tool
from tests.test_docs import BIN, fenced, start, stop

OPERATING = REPO / "docs" / "operating.md"
SECURITY = REPO / "docs" / "security.md"
EXAMPLE = REPO / "docs" / "examples" / "conversation.jsonl"
# The example's messages, numbered 1-4 in carol's memory (one piece each, in file order).
MESSAGES = dict(enumerate((json.loads(line)["content"] for line in
                           EXAMPLE.read_text(encoding="utf-8").splitlines()), start=1))
NOTE = "Prefers window seats"  # a fact of carol's beside them, number 5
RESTORE = 'semmem backup restore "$ID" --at backups --into restored-data'


def prose(path: Path) -> str:
    """A doc's text with its line breaks and runs of spaces made one space."""
    return " ".join(path.read_text(encoding="utf-8").split())


def quoted(path: Path, before: str) -> str:
    """The `code` a doc's prose shows right after ``before``."""
    found = re.search(re.escape(before) + r" ?`([^`]+)`", prose(path))
    assert found is not None, (path.name, before)
    return found.group(1)


def pattern(shown: str) -> re.Pattern[str]:
    """What a doc shows, its ``…`` standing for anything."""
    return re.compile(".*".join(map(re.escape, shown.split("…"))))


def lines(path: Path, begin: str) -> list[str]:
    """The lines of a doc's ``sh`` blocks that begin with ``begin``, as written."""
    return [ln for block in fenced(path, "sh") for ln in block.splitlines()
            if ln.startswith(begin)]


def sh(line: str, where: Path, **env: str) -> subprocess.CompletedProcess[str]:
    """``line`` run by bash in ``where``, this venv's ``semmem`` first on the PATH and no
    ``SEMMEM_`` variable but ``env``, to its end."""
    environ = {k: v for k, v in os.environ.items() if not k.startswith("SEMMEM_")}
    environ.update({"PATH": f"{BIN}:{environ.get('PATH', '')}", "PYTHONPATH": str(REPO),
                    **env})
    return subprocess.run(["bash", "-c", line], cwd=where, env=environ, capture_output=True,
                          text=True, timeout=300)


def ok(line: str, where: Path, **env: str) -> str:
    """What ``line`` printed; it exited 0."""
    done = sh(line, where, **env)
    assert done.returncode == 0, (line, done.stdout[-2000:], done.stderr[-2000:])
    return done.stdout


def created(path: Path, where: Path, umask: str = "") -> str:
    """The backup the doc's ``ID=$(semmem backup create …)`` line made; its id."""
    [line] = lines(path, "ID=$(semmem backup create")
    backup = ok(f"{umask}{line}\necho \"$ID\"", where).strip()
    assert load_manifest(Objects(str(where / "backups")), backup).id == backup
    return backup


def held(where: Path, data: str = "semmem-data", partition: str = "carol") -> dict[int, str]:
    """A partition's live items (number: text), as `semmem export` writes them (its ledger
    lines, after the items, are not items)."""
    out = ok(f"semmem export -p {partition} --data {data}", where)
    return {r["n"]: r["text"] for r in map(json.loads, out.splitlines()) if "n" in r}


def secret_of(data: Path) -> bytes:
    """The secret a store keeps (its registry's)."""
    async def read() -> bytes:
        store = Store(str(data), dim=384, model_id="any")
        await store.open(check_model=False)
        try:
            return store.secret
        finally:
            await store.close()

    return asyncio.run(read())


@pytest.fixture
def carol(tmp_path: Path) -> Path:
    """A folder as the docs' lines assume: ``semmem-data`` holding carol's memory of the
    example conversation (the positive control: all four messages stored) and a fact, the
    conversation's first message then forgotten."""
    where = tmp_path / "here"
    shutil.copytree(REPO / "docs" / "examples", where / "docs" / "examples")
    ok("semmem ingest -p carol docs/examples/conversation.jsonl", where)
    ok(f"semmem remember '{NOTE}' -p carol", where)
    assert held(where) == {**MESSAGES, 5: NOTE}
    ok("semmem forget 1 -p carol", where)
    assert held(where) == {2: MESSAGES[2], 3: MESSAGES[3], 4: MESSAGES[4], 5: NOTE}
    return where


@pytest.mark.model
@pytest.mark.parametrize("ledger", [False, True], ids=["alone", "with-ledger"])
def test_operating_restore_lines_keep_what_was_forgotten_forgotten(carol: Path,
                                                                  ledger: bool) -> None:
    """The backup's items (pieces and the fact) come back; the restore keeps the store's
    secret (its report says whose); with ``--ledger`` it withholds message 2, forgotten after
    the backup, as the doc prints; and the whole-history re-send stores neither message 1,
    forgotten before the backup, nor (with the ledger) message 2 — the same line into a
    partition that forgot nothing stores all four (positive control first)."""
    backup = created(OPERATING, carol)
    ok("semmem forget 2 -p carol", carol)  # forgotten since the backup
    [line] = [ln for ln in lines(OPERATING, RESTORE) if ("--ledger" in ln) is ledger]
    report = json.loads(ok(line, carol, ID=backup))
    shown = json.loads("{" + quoted(OPERATING, "whose secret the new store keeps (") + "}")
    assert report["secret"] == shown["secret"]
    withheld = json.loads("{" + quoted(OPERATING, "forgotten since the backup:") + "}")
    assert report["withheld"]["forgottenOrExpiredSince"] == (
        withheld["forgottenOrExpiredSince"] if ledger else {})
    assert withheld["forgottenOrExpiredSince"] == {"carol": [2]}  # the doc's, as done here
    assert secret_of(carol / "restored-data") == secret_of(carol / "semmem-data")
    kept = {**{n: MESSAGES[n] for n in ((3, 4) if ledger else (2, 3, 4))}, 5: NOTE}
    assert held(carol, "restored-data") == kept

    [resend] = lines(OPERATING, "SEMMEM_DATA=restored-data semmem ingest -p carol ")
    control = resend.replace(" -p carol ", " -p dave ")
    assert json.loads(ok(control, carol))["count"] == 4
    assert sorted(held(carol, "restored-data", "dave").values()) == sorted(MESSAGES.values())
    again = json.loads(ok(resend, carol))
    assert again["count"] == len(kept) and held(carol, "restored-data") == kept


@pytest.mark.model
def test_operating_restore_lines_refuse_a_backup_of_a_later_format(carol: Path) -> None:
    """Both restore lines refuse a backup recorded as of a later format with the line the
    doc shows, and make no store; the same backup restored before its format was changed
    (positive control)."""
    backup = created(OPERATING, carol)
    [alone, with_ledger] = lines(OPERATING, RESTORE)
    ok(alone, carol, ID=backup)
    shutil.rmtree(carol / "restored-data")
    target = Objects(str(carol / "backups"))
    later = replace(load_manifest(target, backup), store_format=FORMAT + 1)
    target.put(manifest_name(backup), later.to_bytes())
    refusal = pattern(quoted(OPERATING, "A backup of a later format is refused before anything "
                                        "is made:"))
    for line in (alone, with_ledger):
        done = sh(line, carol, ID=backup)
        assert done.returncode == 1, done.stdout
        assert refusal.fullmatch(done.stderr.strip()), done.stderr
        assert f"format {FORMAT + 1}, written by a later release" in done.stderr
        assert not (carol / "restored-data").exists()


@pytest.mark.model
def test_security_backup_lines_protect_the_copy_and_keep_the_secret(carol: Path) -> None:
    """Under umask 022 the backup's files are 0600 and its folders 0700; its manifest holds
    the store's secret; message 1, forgotten before it, is in none of its files (message 3
    is: positive control). The restore with the live store as ledger keeps the secret, says so
    as the doc prints, and writes message 2, forgotten since, in no file of the new store
    (message 3 it does)."""
    backup = created(SECURITY, carol, umask="umask 022\n")
    modes = {p.relative_to(carol).as_posix(): p.stat().st_mode & 0o777
             for p in [carol / "backups", *(carol / "backups").rglob("*")]}
    assert f"backups/manifests/{backup}.json" in modes
    assert {m for p, m in modes.items() if (carol / p).is_dir()} == {0o700}
    assert {m for p, m in modes.items() if (carol / p).is_file()} == {0o600}
    secret = secret_of(carol / "semmem-data")
    assert load_manifest(Objects(str(carol / "backups")), backup).secret == secret.hex()
    assert files_with(carol / "backups", MESSAGES[3])
    assert not files_with(carol / "backups", MESSAGES[1])

    ok("semmem forget 2 -p carol", carol)  # forgotten since the backup
    [line] = lines(SECURITY, RESTORE)
    report = json.loads(ok(line, carol, ID=backup))
    assert f'"secret": "{report["secret"]}"' in line  # what its comment says it prints
    assert secret_of(carol / "restored-data") == secret
    assert decoded_with(carol / "restored-data", MESSAGES[3])
    assert not decoded_with(carol / "restored-data", MESSAGES[2])


FACT, LATE = "Keeps bees in the garden", "Plays the cello on Sundays"


@pytest.mark.model
@pytest.mark.slow
@pytest.mark.timeout(600)
def test_operating_reindex_lines_stop_the_live_server_and_serve_the_new_model(
        tmp_path: Path) -> None:
    """`semmem serve` takes a write (positive control); `semmem reindex` to the other model
    beside it exits 0 and that server refuses its next write and exits 1 with the line the doc
    shows; the same serve line started again is refused at open; `semmem check` under the
    new model finds every partition ok; the new serve line serves the fact stored before, and
    not the refused one."""
    where = tmp_path / "here"
    where.mkdir()
    (where / "models").symlink_to(REPO / "models")  # the doc's `models/…`, as in a checkout
    [serve_old] = lines(OPERATING, "semmem serve ")
    [reindex] = lines(OPERATING, "SEMMEM_MODEL=models/multilingual-e5-small semmem reindex")
    [check] = lines(OPERATING, "SEMMEM_MODEL=models/multilingual-e5-small semmem check")
    [serve_new] = lines(OPERATING, "SEMMEM_MODEL=models/multilingual-e5-small semmem serve")
    log = tmp_path / "old.log"
    proc, url = start(serve_old, where, log)
    try:
        token = (where / "semmem-data" / "generated-token").read_text().strip()
        with httpx.Client(base_url=url, timeout=30) as c:
            stored = result_of(send_as(c, token, tool("remember", {"text": FACT},
                                                      partition="alice")))
            assert stored["status"] == "stored", stored
            ok(reindex, where)
            try:  # its next write: refused, never acknowledged
                r = send_as(c, token, tool("remember", {"text": LATE}, partition="alice"))
                assert r.status_code == 503 and r.json()["error"]["code"] == "unavailable", r.text
            except httpx.TransportError:
                pass  # it had already read the change and stopped
        assert proc.wait(60) == 1, log.read_text()[-2000:]
    finally:
        if proc.poll() is None:
            stop(proc)
    last = log.read_text().strip().splitlines()[-1]
    assert pattern(quoted(OPERATING, "The server ends with")).fullmatch(last), last

    again = sh(serve_old, where, SEMMEM_PORT=str(free_port()))  # with the old model, after it
    assert again.returncode == 1, again.stderr[-2000:]
    assert "was embedded with model" in again.stderr.strip().splitlines()[-1], again.stderr

    partitions = json.loads(ok(check, where))
    assert [(p["partition"], p["ok"], p["problems"]) for p in partitions] == [
        ("alice", True, [])]

    proc, url = start(serve_new, where, tmp_path / "new.log")
    try:
        with httpx.Client(base_url=url, timeout=30) as c:
            assert c.get("/readyz").json()["model"].startswith("multilingual-e5-small")
            found = result_of(send_as(c, token, tool("search", {"query": FACT},
                                                     partition="alice")))
        assert [it["text"] for it in found["items"]] == [FACT]
    finally:
        stop(proc)
