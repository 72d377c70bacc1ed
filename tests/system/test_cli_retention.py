"""`semmem retention` and `semmem remember --expires`, end to end with the real model."""

from __future__ import annotations

import json
import time
from pathlib import Path

from typer.testing import CliRunner

from semmem.cli.commands import app
from tests.support.server import iso_in

runner = CliRunner()


def _run(tmp_path: Path, *args: str, **env: str) -> tuple[int, str, str]:
    result = runner.invoke(app, [*args], env={"SEMMEM_DATA": str(tmp_path / "db"), **env})
    return result.exit_code, result.stdout, result.stderr


def test_cli_retention_round_trip(tmp_path: Path) -> None:
    """remember --expires, show (policy and facts due), update --expires (hidden at once),
    preview, set (forgets what had expired first), sweep; bad values are one error line."""
    code, out, _ = _run(tmp_path, "remember", "In Paris until Friday", "-p", "a",
                        "--expires", iso_in(86_400))
    assert code == 0 and json.loads(out)["n"] == 1
    code, out, _ = _run(tmp_path, "remember", "Prefers metric units", "-p", "a",
                        SEMMEM_RETENTION="30d")
    assert code == 0 and json.loads(out)["n"] == 2
    second_written = time.time()
    code, out, _ = _run(tmp_path, "retention", "show", "-p", "a", SEMMEM_RETENTION="30d")
    shown = json.loads(out)
    assert code == 0 and (shown["default"], shown["effective"], shown["due"]) == ("30d", "30d", 2)
    assert shown["items"][0]["n"] == 1  # its own end is the soonest
    code, out, _ = _run(tmp_path, "update", "1", "-p", "a", "--expires", iso_in(-1))
    assert code == 0 and json.loads(out)["count"] == 1  # it ended: counted out at once
    assert "Paris" not in _run(tmp_path, "list", "-p", "a")[1]
    # A 1 s policy expires fact 2 once it is 1 s old (the steps between can take less).
    while time.time() < second_written + 1.1:
        time.sleep(0.05)
    code, out, _ = _run(tmp_path, "retention", "preview", "1s", "-p", "a")
    assert code == 0 and json.loads(out)["expire"] == 1  # the older one; the expired is gone
    code, out, _ = _run(tmp_path, "retention", "set", "never", "-p", "a")
    body = json.loads(out)
    assert code == 0 and body["override"] == "never" and body["expired"] == [1]
    code, out, _ = _run(tmp_path, "retention", "show")
    assert json.loads(out) == {"default": "never",
                               "overrides": [{"partition": "a", "override": "never"}]}
    code, out, _ = _run(tmp_path, "retention", "sweep")
    assert code == 0 and json.loads(out) == {"expired": {}}
    code, _, err = _run(tmp_path, "retention", "set", "5 weeks", "-p", "a")
    assert code == 1 and err.startswith("error: a retention is a duration")
    code, _, err = _run(tmp_path, "remember", "x", "-p", "a", "--expires", "Friday")
    assert code == 1 and "expiresAt must be an ISO 8601 date-time" in err
    code, out, err = _run(tmp_path, "remember", "x", "-p", "a", "--expires", iso_in(-60))
    assert code == 1 and out == "" and "has passed" in err and err.startswith("error: ")


def test_cli_retention_refuses_an_over_long_partition(tmp_path: Path) -> None:
    """The partition bound holds here too: an over-long key sets no override (it did: the
    registry kept one for a partition no other surface can make)."""
    long_key = "k" * 1025
    code, out, err = _run(tmp_path, "retention", "set", "30d", "-p", long_key)
    assert code == 1 and out == "" and "partition must be at most 1024 UTF-8 bytes" in err
    assert long_key not in err
    code, out, _ = _run(tmp_path, "retention", "set", "30d", "-p", "k" * 1024)  # the bound
    assert code == 0 and json.loads(out)["override"] == "30d"
    code, out, _ = _run(tmp_path, "retention", "show", "-p", "k" * 1024)
    assert code == 0 and json.loads(out)["override"] == "30d"
