"""The console's retention: the policy and the facts due on their page, a preview that
changes nothing, an applied policy that forgets what it expires, an item's own end."""

from __future__ import annotations

import re
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from starlette.testclient import TestClient

from semmem.items import iso, now_ms
from tests.support.web import wait_ready
from tests.web.test_console import add, console_client, items_of, post, sign_in, text_of


@pytest.fixture
def client(tmp_path: Path) -> Iterator[TestClient]:
    """A console client under a 90-day default, not signed in."""
    with console_client(tmp_path / "db", retention="90d") as c:
        wait_ready(c)
        yield c


def _cursor(client: TestClient, n: int) -> str:
    page = client.get(f"/console/item?p=a&n={n}").text
    return re.search(r'name="cursor" value="([^"]+)"', page).group(1)  # type: ignore[union-attr]


def test_retention_page_shows_policy_and_facts_due(client: TestClient) -> None:
    csrf = sign_in(client)
    add(client, csrf, "a", "Ann lives in Rome")
    add(client, csrf, "a", "Ann is in Paris until Friday")
    ends = iso(now_ms() + 3_600_000)
    r = post(client, "/item", csrf, p="a", n="2", cursor=_cursor(client, 2),
             text="Ann is in Paris until Friday", expiresAt=ends)
    assert r.status_code == 303, r.text
    assert items_of(client, "a")[1]["expiresAt"] == ends
    partition = text_of(client.get("/console/partition?p=a").text)
    assert "Retention 90d" in partition
    page = client.get("/console/retention?p=a").text
    shown = text_of(page)
    assert "Effective 90d" in shown and "This partition inherit" in shown
    assert "Facts due 2 of 2" in shown
    rows = re.findall(r'<tr id="due-(\d+)">', page)
    assert rows == ["2", "1"]  # its own end comes first
    assert ends in page


def test_retention_preview_changes_nothing_and_apply_forgets(client: TestClient) -> None:
    csrf = sign_in(client)
    add(client, csrf, "a", "Ann lives in Rome")
    written = now_ms()
    while now_ms() < written + 2100:  # it is two seconds old
        time.sleep(0.05)
    add(client, csrf, "a", "Ann runs marathons")
    r = post(client, "/retention/preview", csrf, p="a", policy="2s")
    assert r.status_code == 200
    assert "1 of 2 facts would expire now under 2s" in text_of(r.text)
    assert len(items_of(client, "a")) == 2
    r = post(client, "/retention/preview", csrf, p="a", policy="soon")
    assert r.status_code == 422 and "a retention is a duration" in text_of(r.text)
    r = post(client, "/retention", csrf, p="a", policy="2s")
    assert r.status_code == 303
    assert r.headers["location"] == "/console/retention?p=a&done=retention&n=1"
    assert "1 fact(s) it expired were forgotten" in text_of(
        client.get(r.headers["location"]).text)
    assert [it["text"] for it in items_of(client, "a")] == ["Ann runs marathons"]
    r = post(client, "/retention", csrf, p="a", policy="inherit")
    assert "Effective 90d" in text_of(client.get(r.headers["location"]).text)


def test_item_with_a_past_end_leaves_the_console(client: TestClient) -> None:
    csrf = sign_in(client)
    add(client, csrf, "a", "Ann is in Paris until Friday")
    r = post(client, "/item", csrf, p="a", n="1", cursor=_cursor(client, 1),
             text="Ann is in Paris until Friday", expiresAt="not a date")
    assert r.status_code == 422 and "expiresAt must be an ISO 8601" in text_of(r.text)
    r = post(client, "/item", csrf, p="a", n="1", cursor=_cursor(client, 1),
             text="Ann is in Paris until Friday", expiresAt=iso(now_ms() - 1))
    assert r.status_code == 303
    assert items_of(client, "a") == []
    assert client.get("/console/item?p=a&n=1").status_code == 404
    assert "Paris" not in client.get("/console/partition?p=a").text
