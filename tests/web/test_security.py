"""Security properties of the running server: token rotation without restart, fail-closed
token files, and logs that carry no fact texts, partition names or tokens at info level."""

from __future__ import annotations

import os
import time
import uuid
from pathlib import Path

import pytest

from semmem.serving.auth import Tokens
from tests.support.server import ADMIN, ADMIN_TOKEN, AUTH, JSON, TOKEN, ServerProcess
from tests.support.spans import console_spans
from tests.support.web import app_client, assert_error, recall, send, tool


def write_atomically(path: Path, text: str) -> None:
    """Replace a file the way rotation should: write beside it, then rename over it."""
    tmp = path.with_suffix(".tmp")
    tmp.write_text(text)
    os.replace(tmp, path)


def call(c: object, token: str) -> int:
    """Status of one recall with ``token``."""
    r = send(c, recall("x", partition="rot"),  # type: ignore[arg-type]
             headers={"Authorization": f"Bearer {token}", **JSON})
    return r.status_code


def test_tokens_file_rotation_applies_without_restart(tmp_path: Path) -> None:
    """A new tokens file is read within a second: the new token works, the old one stops."""
    tokens = tmp_path / "tokens"
    tokens.write_text("# provider tokens\nold-token\n")
    with app_client(tmp_path / "db", tokens=None, tokens_file=tokens) as c:
        assert call(c, "old-token") == 200
        assert call(c, "new-token") == 401
        write_atomically(tokens, "new-token\n")
        time.sleep(1.1)
        assert call(c, "new-token") == 200
        assert_error(send(c, recall("x", partition="rot"),
                          headers={"Authorization": "Bearer old-token", **JSON}),
                     401, "unauthorized")


def test_tokens_file_removed_fails_closed(tmp_path: Path,
                                          caplog: pytest.LogCaptureFixture) -> None:
    """A tokens file that disappears revokes its tokens (logged) until it is back."""
    tokens = tmp_path / "tokens"
    tokens.write_text("file-token\n")
    with app_client(tmp_path / "db", tokens="inline-token", tokens_file=tokens) as c:
        assert call(c, "file-token") == 200
        tokens.unlink()
        time.sleep(1.1)
        with caplog.at_level("ERROR", logger="semmem.web"):
            assert call(c, "file-token") == 401
        assert "cannot read tokens file" in caplog.text
        assert call(c, "inline-token") == 200  # the inline tokens stay
        tokens.write_text("file-token\n")
        time.sleep(1.1)
        assert call(c, "file-token") == 200


def test_admin_tokens_file_rotation(tmp_path: Path) -> None:
    """Admin tokens rotate the same way; a provider token never reaches the admin API."""
    admin = tmp_path / "admin"
    admin.write_text("admin-1\n")
    with app_client(tmp_path / "db", admin_tokens=None, admin_tokens_file=admin) as c:
        ok = {"Authorization": "Bearer admin-1"}
        assert c.get("/admin/partitions", headers=ok).status_code == 200
        write_atomically(admin, "admin-2\n")
        time.sleep(1.1)
        assert_error(c.get("/admin/partitions", headers=ok), 401, "unauthorized")
        assert c.get("/admin/partitions",
                     headers={"Authorization": "Bearer admin-2"}).status_code == 200
        assert_error(c.get("/admin/partitions", headers=AUTH), 403, "forbidden")


def test_tokens_compare_digests_of_every_token() -> None:
    """Matching looks at every token through fixed-length digests; wrong ones never match."""
    tokens = Tokens(["a" * 43, "b"])
    assert tokens.matches("Bearer " + "a" * 43) and tokens.matches("Bearer b")
    for wrong in ("Bearer " + "a" * 42, "Bearer " + "a" * 44, "Bearer ", "Basic b", "b", None,
                  "Bearer b\x00", "Bearer \udcff"):
        assert not tokens.matches(wrong)


@pytest.mark.timeout(120)
def test_info_logs_hold_no_texts_partitions_or_tokens(tmp_path: Path) -> None:
    """A real server at log level info, tracing to its console, through writes, reads,
    refusals and admin calls: its whole output (uvicorn's access lines and every span's
    attributes included) never shows a fact text, a query, a partition name or a token."""
    secret = f"zz{uuid.uuid4().hex}"
    partition = f"owner-{uuid.uuid4().hex}"
    wrong = f"wrong-{uuid.uuid4().hex}"
    server = ServerProcess(tmp_path / "db", env={"SEMMEM_LOG_LEVEL": "info",
                                                 "SEMMEM_MAINTENANCE_DELAY_S": "0.1",
                                                 "SEMMEM_VERSION_RETENTION_S": "0.5",
                                                 "OTEL_TRACES_EXPORTER": "console"})
    server.start().wait_ready()
    try:
        with server.client() as c:
            n = send(c, tool("remember", {"text": f"My PIN is {secret}"},
                             partition=partition)).json()["result"]["n"]
            send(c, tool("remember", {"text": f"my pin is {secret}"}, partition=partition))
            send(c, recall(f"what is my PIN {secret}?", partition=partition))
            send(c, tool("search", {"query": f"PIN {secret}"}, partition=partition))
            send(c, tool("update", {"n": n, "text": f"My PIN is now {secret}!"},
                         partition=partition))
            refusals = [
                tool("remember", {"text": f"{secret} " * 300}, partition=partition),  # 422
                tool("remember", {"text": secret, "extra": secret}, partition=partition),
                tool("update", {"n": secret, "text": secret}, partition=partition),
                tool("search", {"query": secret}, partition=partition, access="nope"),
                tool("remember", {"text": secret}, partition=partition, access="read"),  # 403
                tool("forget", {"n": 999}, partition=partition),  # 404
                tool("forget", {"n": 1}, cursor=f"c1.1.{secret}", partition=partition),
                tool(secret, {"text": secret}, partition=partition),  # unknown tool
            ]
            for body in refusals:
                assert send(c, body).status_code in (400, 403, 404, 422)
            assert send(c, b'{"partition": "%s", "partition": "x"}' % partition.encode()
                        ).status_code == 400
            assert c.post("/memory", json=recall(secret, partition=partition),
                          headers={"Authorization": f"Bearer {wrong}"}).status_code == 401
            assert c.get("/admin/export", params={"partition": partition},
                         headers=ADMIN).status_code == 200
            assert c.get("/admin/items", params={"partition": partition},
                         headers={"Authorization": f"Bearer {wrong}"}).status_code == 401
            send(c, tool("forget", {"n": n}, partition=partition))
            assert c.delete("/admin/partitions", params={"partition": partition},
                            headers=ADMIN).status_code == 200
            time.sleep(2.0)  # let maintenance run and log
    finally:
        server.stop()
    log = server.output()
    assert "POST /memory" in log and "operation" in log  # info lines were written
    names = {span["name"] for span in console_spans(log)}  # and the spans
    assert {"create_memory", "search_memory", "update_memory", "delete_memory",
            "semmem.commit"} <= names
    for needle in (secret, partition, TOKEN, ADMIN_TOKEN, wrong):
        assert needle not in log, f"{needle!r} is in the log"
