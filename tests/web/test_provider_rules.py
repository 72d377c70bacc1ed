"""Exactness of the wire: paths not served, media types, deadline horizon, `accepted` status,
and edits the model's tools may not make (issue 15)."""

from __future__ import annotations

from collections.abc import Iterator
from functools import partial
from pathlib import Path

import pytest
from starlette.testclient import TestClient

from semmem.memory import Memory
from tests.support.server import ADMIN, AUTH, iso_in
from tests.support.web import app_client, assert_error, recall, remember, send, tool


@pytest.fixture(scope="module")
def client(tmp_path_factory: pytest.TempPathFactory) -> Iterator[TestClient]:
    with app_client(tmp_path_factory.mktemp("exact") / "db") as c:
        yield c


@pytest.mark.parametrize("path", ["/memory/", "/memory//", "/Memory", "/memory/x", "/"])
def test_paths_not_served_answer_404_in_the_envelope(client: TestClient, path: str) -> None:
    r = client.post(path, content=b"{}", headers={**AUTH, "Content-Type": "application/json"},
                    follow_redirects=False)
    assert_error(r, 404, "not_found")


@pytest.mark.parametrize("content_type", [
    "application/json; charset=utf-8; x=y",
    "application/json;charset=UTF-8",
    'application/json; charset="utf-8"',
    "application/json; x=y",
    "Application/JSON ; Charset = utf-8",
])
def test_json_with_parameters_is_accepted(client: TestClient, content_type: str) -> None:
    r = send(client, recall(None, partition="ct"), {**AUTH, "Content-Type": content_type})
    assert r.status_code == 200, r.text


@pytest.mark.parametrize("content_type", ["text/plain", "", "application/jsonx",
                                          "multipart/form-data; boundary=x"])
def test_other_media_types_are_refused_naming_the_header(client: TestClient,
                                                         content_type: str) -> None:
    r = send(client, recall(None, partition="ct"), {**AUTH, "Content-Type": content_type})
    assert "Content-Type" in assert_error(r, 400, "invalid_request")["message"]


def test_a_charset_other_than_utf8_is_refused_naming_the_header(client: TestClient) -> None:
    r = send(client, recall(None, partition="ct"),
             {**AUTH, "Content-Type": "application/json; charset=latin-1"})
    assert "Content-Type" in assert_error(r, 400, "invalid_request")["message"]


@pytest.mark.parametrize("deadline", ["9999-12-31T23:59:59Z", iso_in(8 * 24 * 3600)],
                         ids=["year-9999", "in-8-days"])
def test_a_deadline_past_the_horizon_is_refused(client: TestClient, deadline: str) -> None:
    p = "far-deadline"
    r = send(client, tool("remember", {"text": "kept forever?"}, partition=p,
                          deadlineAt=deadline))
    error = assert_error(r, 400, "invalid_request")
    assert "deadlineAt" in error["message"]
    r = send(client, recall(None, partition=p, deadlineAt=deadline))
    assert_error(r, 400, "invalid_request")


def test_a_deadline_within_the_horizon_is_served(client: TestClient) -> None:
    r = send(client, tool("remember", {"text": "a fact due tomorrow"}, partition="near",
                          deadlineAt=iso_in(23 * 3600)))
    assert r.status_code == 200, r.text


def test_a_refused_write_leaves_no_partition(client: TestClient) -> None:
    p = "never-created"
    assert_error(send(client, tool("forget", {"n": 5}, partition=p)), 404, "not_found")
    assert_error(send(client, tool("update", {"n": 5, "text": "x"}, partition=p)), 404,
                 "not_found")
    assert send(client, recall("anything", partition=p)).status_code == 200
    names = client.get("/admin/partitions", headers=ADMIN).json()
    assert p not in str(names)


def test_writes_say_accepted_when_reads_can_lag(tmp_path: Path) -> None:
    with app_client(tmp_path / "db", read_consistency_ms=500) as c:
        first = send(c, tool("remember", {"text": "lagging fact"}, partition="lag"))
        assert first.json()["result"]["status"] == "accepted", first.text
        again = send(c, tool("remember", {"text": "lagging fact"}, partition="lag"))
        assert again.json()["result"]["status"] == "accepted"
        up = send(c, tool("update", {"n": 1, "text": "lagging fact, changed"}, partition="lag"))
        assert up.json()["result"]["status"] == "accepted"
        gone = send(c, tool("forget", {"n": 1}, partition="lag"))
        assert gone.json()["result"]["status"] == "accepted"


def test_writes_say_stored_when_reads_cannot_lag(client: TestClient) -> None:
    assert remember(client, "nolag", "an instant fact")["status"] == "stored"


def test_tool_descriptions_follow_read_consistency() -> None:
    from semmem.protocol.declaration import render_declaration, tools_declaration
    from semmem.protocol.tools import tools_for

    lagging = {t.name: t.description for t in tools_for(accepted=True)}
    instant = {t.name: t.description for t in tools_for(accepted=False)}
    for name in ("remember", "update", "forget"):
        assert "'accepted'" in lagging[name] and "next recall" not in lagging[name]
        assert "'stored'" in instant[name]
    declared = {t["name"]: t["description"] for t in tools_declaration(accepted=True)}
    assert declared == lagging  # checked against the contract's declaration rules
    assert "'accepted'" in render_declaration(accepted=True)


def test_model_tools_cannot_edit_owner_curated_records(tmp_path: Path) -> None:
    with app_client(tmp_path / "db") as c:
        p = "curated"
        remember(c, p, "Prefers metric units")
        remember(c, p, "Lives in Lyon")
        memory: Memory = c.app.state.runtime.require_memory()
        assert c.portal is not None
        # owners (the Python API, the CLI, the admin API) may curate and edit them
        c.portal.call(partial(memory.update, p, 1, attrs={"status": "inactive"}))
        c.portal.call(partial(memory.update, p, 2, attrs={"slug": "home"}))
        for n in (1, 2):
            for body in (tool("update", {"n": n, "text": "stray edit"}, partition=p),
                         tool("forget", {"n": n}, partition=p)):
                error = assert_error(send(c, body), 403, "forbidden")
                assert "owner" in error["message"]
        assert c.portal.call(partial(memory.forget, p, 1))["forgotten"] is True


def test_declare_describes_accepted_writes_when_reads_can_lag() -> None:
    from typer.testing import CliRunner

    from semmem.cli.commands import app

    lagging = CliRunner().invoke(app, ["declare", "--json"],
                                 env={"SEMMEM_READ_CONSISTENCY_MS": "500"})
    assert lagging.exit_code == 0 and "(status 'accepted')" in lagging.output
    instant = CliRunner().invoke(app, ["declare", "--json"],
                                 env={"SEMMEM_READ_CONSISTENCY_MS": "0"})
    assert instant.exit_code == 0 and "(status 'stored')" in instant.output
    assert "(status 'accepted')" not in instant.output
