"""Backups started from a running server (``POST /admin/backups``), real process, real HTTP."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest

from semmem.lifecycle.backup import verify_backup
from semmem.store.copies.objects import Objects
from tests.support.server import ADMIN, AUTH, ServerProcess
from tests.support.web import Client, assert_error, remember


def _job(c: Client, job: str, timeout: float = 60.0) -> dict[str, Any]:
    """The job once it is no longer running."""
    deadline = time.monotonic() + timeout
    while True:
        jobs = {j["job"]: j for j in c.get("/admin/backups", headers=ADMIN).json()["jobs"]}
        if jobs[job]["state"] != "running":
            return jobs[job]
        assert time.monotonic() < deadline, jobs[job]
        time.sleep(0.05)


@pytest.mark.timeout(180)
def test_admin_starts_a_backup_while_the_server_serves(tmp_path: Path) -> None:
    target = tmp_path / "backups"
    server = ServerProcess(tmp_path / "db", env={"SEMMEM_BACKUP_TO": str(target)}).start()
    try:
        server.wait_ready()
        with server.client() as c:
            for i in range(5):
                remember(c, "p", f"fact number {i}")
            assert_error(c.post("/admin/backups", headers=AUTH), 403, "forbidden")
            assert_error(c.post("/admin/backups"), 401, "unauthorized")
            r = c.post("/admin/backups", headers=ADMIN)
            assert r.status_code == 202, r.text
            started = r.json()
            assert started["state"] == "running" and started["to"] == str(target)
            remember(c, "p", "a write while the backup runs")  # served meanwhile
            done = _job(c, started["job"])
            assert done["state"] == "done", done
            listing = c.get("/admin/backups", headers=ADMIN).json()
        assert [b["id"] for b in listing["backups"]] == [done["backup"]["id"]]
        assert listing["backups"][0]["items"] >= 5
        assert verify_backup(Objects(str(target)), done["backup"]["id"]).problems == []
    finally:
        server.stop()


def test_admin_backup_without_a_target_is_refused(tmp_path: Path) -> None:
    server = ServerProcess(tmp_path / "db").start()
    try:
        server.wait_ready()
        with server.client() as c:
            body = assert_error(c.post("/admin/backups", headers=ADMIN), 400, "invalid_request")
            assert "SEMMEM_BACKUP_TO" in body["message"]
            listing = c.get("/admin/backups", headers=ADMIN).json()
            assert listing == {"to": None, "backups": [], "jobs": []}
    finally:
        server.stop()
