"""A replaced or cleared record field is a dropped value: after an edit that changes only the
metadata or a note, the old value and its metadata tag leave every data and index file within
the forget window, whichever process made the edit (a server's admin API, the CLI)."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import pytest

from semmem.items.metadata import tag
from tests.support.files import decoded_hits
from tests.support.server import ADMIN, AUTH, JSON, REPO, ServerProcess
from tests.support.web import tool

# The retention raised to the fence's floor (3 s + twice the 1 s skew): the window is the
# follow-up's lag, then a retention and the delay, twice over, plus the follow interval.
FAST = {"SEMMEM_VERSION_RETENTION_S": "1", "SEMMEM_MAINTENANCE_DELAY_S": "0.1"}
WINDOW_S = 2 * (5 + 0.1) + 1 + 2.0
MARGIN_S = 20.0  # a shared machine's passes run late


def _wait_gone(data: Path, needles: list[str]) -> float:
    """Seconds until none of ``needles`` is in any file under ``data`` (raw or decoded); fails
    past the window and a margin, naming what is left."""
    started = time.monotonic()
    while left := decoded_hits(data, needles):
        waited = time.monotonic() - started
        assert waited < WINDOW_S + MARGIN_S, f"still on disk after {waited:.0f} s: " \
            f"{[needles[i] for i in sorted(left)]}"
        time.sleep(0.5)  # the scan's pace, not a timing: the deadline above decides
    return time.monotonic() - started


def _remember(server: ServerProcess, text: str) -> int:
    with server.client() as c:
        r = c.post("/memory", content=json.dumps(tool("remember", {"text": text},
                                                      partition="p")),
                   headers={**AUTH, **JSON})
        assert r.status_code == 200, r.text
        return int(r.json()["result"]["n"])


def _patch(server: ServerProcess, n: int, body: dict[str, object]) -> None:
    with server.client() as c:
        r = c.patch("/admin/items", params={"partition": "p", "n": n}, json=body, headers=ADMIN)
        assert r.status_code == 200, r.text


@pytest.mark.timeout(180)
def test_a_patch_replacing_metadata_or_clearing_a_note_purges_the_old_values(
        tmp_path: Path) -> None:
    """``PATCH /admin/items`` with only ``metadata`` or ``{"note": null}``: the replaced
    value, its tag and the cleared note go within the window (before: on disk for good)."""
    data = tmp_path / "db"
    ssn, note = "078-05-1120-patched-ssn", "door pin 4471-cleared-note"
    server = ServerProcess(data, env=FAST).start()
    try:
        server.wait_ready()
        n = _remember(server, "Ada's account has a verified identity.")
        _patch(server, n, {"metadata": {"ssn": ssn}, "note": note})
        needles = [ssn, tag("ssn", ssn), note]
        assert decoded_hits(data, needles) == {0, 1, 2}  # the scan sees them first
        _patch(server, n, {"metadata": {"ssn": "redacted"}})
        _patch(server, n, {"note": None})
        _wait_gone(data, needles)
        with server.client() as c:  # the edit itself stands
            item = c.get("/admin/items", params={"partition": "p"}, headers=ADMIN).json()
        assert item["items"][0]["metadata"] == {"ssn": "redacted"}
        assert "note" not in item["items"][0]
    finally:
        server.stop()


@pytest.mark.timeout(240)
def test_a_cli_metadata_edit_from_another_process_is_purged_by_the_server(
        tmp_path: Path) -> None:
    """``semmem update N --meta ''`` in its own process beside a running server: the CLI,
    which runs no maintenance, hands the purge to the store and the server purges the old
    value and its tag within the window (before: no hand-off, on disk for good)."""
    data = tmp_path / "db"
    pin = "7730-cli-cleared-pin"
    server = ServerProcess(data, env=FAST, model=True).start()
    try:
        server.wait_ready()
        n = _remember(server, "Grace keeps her safe's code in her metadata.")
        _patch(server, n, {"metadata": {"pin": pin}})
        needles = [pin, tag("pin", pin)]
        assert decoded_hits(data, needles) == {0, 1}  # the positive control
        env = {"SEMMEM_DATA": str(data), "SEMMEM_LOG_LEVEL": "warning",
               "PATH": "/usr/bin:/bin", **FAST}
        done = subprocess.run([sys.executable, "-m", "semmem.cli", "update", str(n), "-p", "p",
                               "--meta", ""], cwd=REPO, env=env, capture_output=True,
                              text=True, timeout=120)
        assert done.returncode == 0, done.stderr
        assert json.loads(done.stdout)["status"] == "stored"
        _wait_gone(data, needles)
    finally:
        server.stop()
