"""``semmem backup …`` end to end, and backups killed at random points (real processes)."""

from __future__ import annotations

import asyncio
import json
import os
import random
import signal
import subprocess
import sys
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

import pytest
from typer.testing import CliRunner

from semmem.cli.commands import app
from semmem.embedding.fakes import HashingEmbedder
from semmem.lifecycle.backup import list_backups
from semmem.memory import Memory
from semmem.store.copies.objects import Objects
from tests.support.memory import open_memory
from tests.support.server import REPO

runner = CliRunner()


def _cli(*args: str, data: Path | None = None) -> tuple[int, str, str]:
    env = {"SEMMEM_DATA": str(data)} if data is not None else {}
    result = runner.invoke(app, ["backup", *args], env=env)
    return result.exit_code, result.stdout, result.stderr


def _on(data: Path, work: Callable[[Memory], Awaitable[object]]) -> None:
    """Run ``work`` on a memory over ``data`` (the fake embedder), outside any event loop."""

    async def go() -> None:
        memory = await open_memory(data, HashingEmbedder())
        try:
            await work(memory)
        finally:
            await memory.close()

    asyncio.run(go())


async def _facts(memory: Memory) -> None:
    await memory.remember("alice", "Prefers metric units")
    await memory.remember("alice", "Has a cat named Tom")


def test_cli_backup_create_list_verify_restore_expire(tmp_path: Path) -> None:
    _on(tmp_path / "live", _facts)
    target = str(tmp_path / "backups")
    code, out, err = _cli("create", "--to", target, "--data", str(tmp_path / "live"))
    assert code == 0, err
    created = json.loads(out.strip().splitlines()[-1])
    assert (created["partitions"], created["items"], created["copied"]) == (1, 2, 1)
    code, out, _ = _cli("list", "--at", target)
    assert code == 0 and [b["id"] for b in json.loads(out)] == [created["id"]]
    code, out, _ = _cli("verify", created["id"], "--at", target)
    assert code == 0 and json.loads(out)["ok"] is True
    _on(tmp_path / "live", lambda m: m.forget("alice", 2))
    into = str(tmp_path / "restored")
    code, out, err = _cli("restore", created["id"], "--at", target, "--into", into,
                          "--ledger", str(tmp_path / "live"))
    assert code == 0, err
    report = json.loads(out)
    assert report["withheld"]["forgottenOrExpiredSince"] == {"alice": [2]}
    assert report["model"] == HashingEmbedder().model_id
    busy = tmp_path / "busy"
    busy.mkdir()
    (busy / "notes.txt").write_text("mine")
    for taken in (into, str(busy)):  # a restored store, a folder holding a file
        code, _, err = _cli("restore", created["id"], "--at", target, "--into", taken)
        assert code == 1 and err == f"error: {taken} is not empty: a backup is restored " \
                                    "into a new store\n"
    assert [p.name for p in busy.iterdir()] == ["notes.txt"]
    code, _, err = _cli("verify", "20990101T000000.000Z-abcdef", "--at", target)
    assert code == 1 and err.startswith("error: no backup")
    code, out, _ = _cli("expire", "--at", target, "--keep", "90d")
    assert code == 0 and json.loads(out)["kept"] == [created["id"]]
    code, _, err = _cli("expire", "--at", target, "--keep", "soon")
    assert code == 1 and "not a duration" in err


def test_cli_refuses_a_missing_backup_and_a_missing_store(tmp_path: Path) -> None:
    (tmp_path / "backups").mkdir()
    code, _, err = _cli("restore", "20990101T000000.000Z-abcdef", "--at",
                        str(tmp_path / "backups"), "--into", str(tmp_path / "new"))
    assert code == 1 and err.startswith("error: no backup")
    code, _, err = _cli("create", "--to", str(tmp_path / "backups"),
                        "--data", str(tmp_path / "nothing"))
    assert code == 1 and err == f"error: no store at {tmp_path / 'nothing'}\n"
    assert not (tmp_path / "new").exists() and not (tmp_path / "nothing").exists()


def _start(data: Path, target: Path) -> subprocess.Popen[bytes]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("SEMMEM_")}
    return subprocess.Popen(
        [sys.executable, "-m", "semmem.cli", "backup", "create", "--to", str(target),
         "--data", str(data)], cwd=REPO, env=env, stdout=subprocess.PIPE,
        stderr=subprocess.PIPE)


@pytest.mark.timeout(300)
async def test_a_backup_killed_at_random_points_is_never_listed(
        tmp_path: Path, live: Memory) -> None:
    names = [f"p{i:02d}" for i in range(24)]
    for name in names:
        await live.import_(name, [{"text": f"{name} fact {j}"} for j in range(150)])
    seed = random.randrange(1 << 30)
    rng = random.Random(seed)
    killed = 0
    for run in range(3):
        target = tmp_path / f"killed-{run}"
        proc = _start(tmp_path / "live", target)
        objects = target / "objects"
        wanted = rng.randint(0, len(names) - 1)  # objects written when the kill comes
        while proc.poll() is None and (
                len([p for p in objects.glob("*") if ".tmp-" not in p.name])
                if objects.is_dir() else 0) < wanted:
            time.sleep(0.002)
        proc.send_signal(signal.SIGKILL)
        out, _ = proc.communicate(timeout=60)
        found = list_backups(Objects(str(target)))
        if proc.returncode == 0:  # it finished before the kill came: then it is listed
            assert [m.id for m in found] == [json.loads(out.splitlines()[-1])["id"]]
            continue
        killed += 1
        assert found == [], f"seed {seed}: a killed backup is listed"
        assert not (target / "manifests").exists() or not any(
            p.suffix == ".json" for p in (target / "manifests").iterdir())
    assert killed >= 2, f"seed {seed}: the kills came too late"
    # a complete backup into a target holding a killed one's objects: only it is listed
    proc = _start(tmp_path / "live", tmp_path / "killed-0")
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 0, err
    done = json.loads(out.splitlines()[-1])
    found = list_backups(Objects(str(tmp_path / "killed-0")))
    assert [m.id for m in found] == [done["id"]] and found[0].summary()["items"] == 24 * 150
