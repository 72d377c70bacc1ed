"""The owner console over HTTP, in process: sessions, CSRF, headers, every page and form.

The browser half (a real Chromium against a real server) is
``tests/system/test_console_browser.py``.
"""

from __future__ import annotations

import asyncio
import base64
import html
import json
import re
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from starlette.testclient import TestClient

from semmem.embedding.fakes import HashingEmbedder
from semmem.web.app import create_app
from semmem.web.console import data
from semmem.web.console.session import COOKIE, Sessions
from tests.support.memory import open_memory
from tests.support.server import ADMIN, ADMIN_TOKEN, AUTH, TOKEN
from tests.support.web import assert_error, recall, settings_for, tool, wait_ready

BASE = "http://127.0.0.1:8080"
ORIGIN = {"Origin": BASE}


def console_client(data_dir: Path, *, base_url: str = BASE, client_host: str = "127.0.0.1",
                   **overrides: Any) -> TestClient:
    """The whole app in process, as a browser on this machine sees it (no redirects followed)."""
    app = create_app(settings_for(data_dir, **overrides), embedder=HashingEmbedder())
    return TestClient(app, base_url=base_url, client=(client_host, 50000),
                      follow_redirects=False)


@pytest.fixture
def client(tmp_path: Path) -> Iterator[TestClient]:
    """A console client, not signed in."""
    with console_client(tmp_path / "db") as c:
        wait_ready(c)
        yield c


def csrf_of(page: str) -> str:
    """The CSRF token in a rendered page's forms."""
    found = re.search(r'name="csrf" value="([0-9a-f]{64})"', page)
    assert found, "no CSRF field on the page"
    return found.group(1)


def sign_in(client: TestClient, token: str = ADMIN_TOKEN) -> str:
    """Sign in and return the session's CSRF token."""
    r = client.post("/console/signin", data={"token": token, "next": "/console/"},
                    headers=ORIGIN)
    assert r.status_code == 303, r.text
    return csrf_of(client.get("/console/").text)


def sessions_of(client: TestClient) -> Sessions:
    """The server-side sessions of the app's console."""
    mount = next(r for r in client.app.routes  # the mount, not the slashless redirect
                 if getattr(r, "path", "") == "/console" and hasattr(r, "routes"))
    sessions: Sessions = mount.app.state.sessions  # type: ignore[attr-defined]
    return sessions


def sign_in_without_pages(client: TestClient) -> str:
    """Sign in, and read the session's CSRF token off the server (when no page can render)."""
    r = client.post("/console/signin", data={"token": ADMIN_TOKEN}, headers=ORIGIN)
    assert r.status_code == 303, r.text
    session = sessions_of(client).get(client.cookies.get(COOKIE))
    assert session is not None
    return session.csrf


def post(client: TestClient, path: str, csrf: str, **fields: str) -> Any:
    """A console form submission from a console page."""
    return client.post(f"/console{path}", data={"csrf": csrf, **fields}, headers=ORIGIN)


def add(client: TestClient, csrf: str, partition: str, text: str, note: str = "") -> int:
    """Add an item through the form; returns its number."""
    r = post(client, "/partition/add", csrf, p=partition, add_text=text, add_note=note)
    assert r.status_code == 303, r.text
    found = re.search(r"n=(\d+)", r.headers["location"])
    assert found
    return int(found.group(1))


def items_of(client: TestClient, partition: str) -> list[dict[str, Any]]:
    """The partition's items, as the admin API lists them (an independent reader)."""
    r = client.get("/admin/items", params={"partition": partition},
                   headers={"Authorization": f"Bearer {ADMIN_TOKEN}"})
    assert r.status_code == 200, r.text
    items: list[dict[str, Any]] = r.json()["items"]
    return items


def text_of(page: str) -> str:
    """A page's visible text, tags removed and entities decoded (for assertions)."""
    return html.unescape(re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", page)))


PAGES = ["/console/", "/console/partition?p=a", "/console/item?p=a&n=1",
         "/console/export?p=a", "/console/delete?p=a", "/console/retention?p=a"]
FORMS = ["/signout", "/partition/add", "/partition/search", "/partition/recall", "/item",
         "/item/forget", "/delete", "/retention", "/retention/preview"]


# ----- on or off --------------------------------------------------------------------------------
def test_console_off_without_admin_tokens(tmp_path: Path) -> None:
    with console_client(tmp_path / "db", admin_tokens=None) as c:
        wait_ready(c)
        for path in ("/console", "/console/", "/console/signin"):
            assert_error(c.get(path), 404, "not_found")


def test_console_address_without_slash_lands_on_the_console(client: TestClient) -> None:
    """A person typing ``/console`` lands on the console (it used to answer a JSON 404)."""
    r = client.get("/console")
    assert r.status_code == 307 and r.headers["location"] == "/console/"
    assert r.headers["cache-control"] == "no-store"
    landed = client.get(r.headers["location"])
    assert landed.status_code == 303 and landed.headers["location"].startswith("/console/signin")
    assert_error(client.post("/console"), 405, "invalid_request")


def test_create_app_refuses_provider_path_under_console(tmp_path: Path) -> None:
    from semmem.errors import InvalidInput

    with pytest.raises(InvalidInput, match="taken by the console"):
        create_app(settings_for(tmp_path / "db", path="/console/memory"),
                   embedder=HashingEmbedder())


# ----- signing in -------------------------------------------------------------------------------
def test_pages_redirect_to_signin_without_session(client: TestClient) -> None:
    for path in PAGES:
        r = client.get(path)
        assert r.status_code == 303, path
        assert r.headers["location"].startswith("/console/signin?next=%2Fconsole%2F"), path
    r = client.get("/console/signin")
    assert r.status_code == 200
    assert 'type="password"' in r.text and '<label for="token">Admin token</label>' in r.text


def test_signin_wrong_token_refused(client: TestClient) -> None:
    r = client.post("/console/signin", data={"token": "not-a-token"}, headers=ORIGIN)
    assert r.status_code == 401
    assert "Wrong admin token." in r.text
    assert "set-cookie" not in r.headers
    assert client.get("/console/").status_code == 303


def test_signin_provider_token_refused(client: TestClient) -> None:
    r = client.post("/console/signin", data={"token": TOKEN}, headers=ORIGIN)
    assert r.status_code == 403
    assert "This is a provider token; the console needs an admin token." in r.text
    assert "set-cookie" not in r.headers


def test_provider_token_session_reaches_no_page(client: TestClient) -> None:
    """A session whose token is (now) a provider token opens nothing, GET or POST."""
    for path in PAGES:
        forged = sessions_of(client).start(TOKEN)
        client.cookies.set(COOKIE, forged.cookie)
        r = client.get(path)
        assert r.status_code == 403, path
        assert "this is a provider token; the console needs an admin token" in r.text
        assert f'{COOKIE}=""' in r.headers["set-cookie"]  # the useless cookie is dropped
    for path in FORMS:
        forged = sessions_of(client).start(TOKEN)
        client.cookies.set(COOKIE, forged.cookie)
        r = post(client, path, forged.csrf, p="a", n="1", add_text="x", q="x", max_bytes="9",
                 confirm="a")
        assert r.status_code == 403, path
        assert "provider token" in r.text
    assert items_of(client, "a") == []


def test_bearer_header_is_not_a_session(client: TestClient) -> None:
    for token in (ADMIN_TOKEN, TOKEN):
        r = client.get("/console/", headers={"Authorization": f"Bearer {token}"})
        assert r.status_code == 303
        assert r.headers["location"].startswith("/console/signin")


def test_signin_sets_strict_httponly_cookie_without_secure_on_loopback(
        client: TestClient) -> None:
    r = client.post("/console/signin", data={"token": ADMIN_TOKEN}, headers=ORIGIN)
    assert r.status_code == 303
    assert r.headers["location"] == "/console/"
    cookie = r.headers["set-cookie"]
    assert cookie.startswith(f"{COOKIE}=v2.")
    attrs = {a.strip().split("=")[0].lower() for a in cookie.split(";")[1:]}
    assert {"httponly", "path", "samesite", "max-age"} <= attrs
    assert "samesite=strict" in cookie.lower() and "path=/console" in cookie.lower()
    assert "secure" not in attrs  # browsers would not send it back over http://127.0.0.1
    value = cookie.split(";")[0].split("=", 1)[1]
    assert ADMIN_TOKEN not in cookie  # never verbatim (and never in a page)
    # ... nor encoded: the cookie is a random id (256 bits), whatever the token
    assert re.fullmatch(r"v2\.[A-Za-z0-9_-]{43}", value), value
    assert base64.urlsafe_b64encode(ADMIN_TOKEN.encode()).decode().rstrip("=") not in value
    page = client.get("/console/")
    assert page.status_code == 200 and ADMIN_TOKEN not in page.text


def test_signin_over_https_sets_secure_cookie(tmp_path: Path) -> None:
    with console_client(tmp_path / "db", base_url="https://memory.example.org",
                        client_host="203.0.113.9") as c:
        wait_ready(c)
        r = c.post("/console/signin", data={"token": ADMIN_TOKEN},
                   headers={"Origin": "https://memory.example.org"})
        assert r.status_code == 303
        assert "secure" in {a.strip().lower() for a in r.headers["set-cookie"].split(";")}
        assert c.get("/console/").status_code == 200


def test_signin_over_plain_http_from_another_machine_refused(tmp_path: Path) -> None:
    with console_client(tmp_path / "db", base_url="http://10.0.0.5:8080",
                        client_host="10.0.0.7") as c:
        wait_ready(c)
        r = c.post("/console/signin", data={"token": ADMIN_TOKEN},
                   headers={"Origin": "http://10.0.0.5:8080"})
        assert r.status_code == 403
        assert "only accepts sign-ins from this machine" in r.text
        assert "set-cookie" not in r.headers


def test_signin_next_goes_only_to_console_pages(client: TestClient) -> None:
    for target, expected in [("/console/partition?p=a%2F%2Fb", "/console/partition?p=a%2F%2Fb"),
                             ("https://evil.example/", "/console/"),
                             ("//evil.example/console/", "/console/"),
                             ("/console/..\\evil", "/console/"), ("/admin/items", "/console/")]:
        r = client.post("/console/signin", data={"token": ADMIN_TOKEN, "next": target},
                        headers=ORIGIN)
        assert r.status_code == 303
        assert r.headers["location"] == expected, target


def test_session_expired_or_token_removed_signs_out(client: TestClient) -> None:
    sessions = sessions_of(client)
    removed = sessions.start("a-token-no-longer-configured")
    old = sessions.start(ADMIN_TOKEN)
    for session in (removed, old):
        client.cookies.set(COOKIE, session.cookie)
        if session is old:
            assert client.get("/console/").status_code == 200  # it does open the console...
            sessions.max_age_s = -1  # ... until its lifetime, counted by the server, is up
        r = client.get("/console/")
        assert r.status_code == 303
        assert r.headers["location"].startswith("/console/signin")
        assert f'{COOKIE}=""' in r.headers["set-cookie"]
        assert sessions.get(session.cookie) is None  # ended on the server too


def test_cookie_from_before_a_sign_out_opens_nothing(client: TestClient) -> None:
    """Signing out ends the session on the server: a copy of the cookie is worthless after."""
    csrf = sign_in(client)
    stolen = client.cookies.get(COOKIE)
    assert stolen and client.get("/console/").status_code == 200  # the copy works meanwhile
    assert post(client, "/signout", csrf).status_code == 303
    client.cookies.set(COOKIE, stolen)
    r = client.get("/console/")
    assert r.status_code == 303 and r.headers["location"].startswith("/console/signin")
    r = post(client, "/partition/add", csrf, p="a", add_text="after sign-out")
    assert r.status_code == 303 and r.headers["location"].startswith("/console/signin")
    assert items_of(client, "a") == []


def test_cookie_in_the_old_format_opens_nothing(client: TestClient) -> None:
    """The v1 cookie carried the admin token itself; one made by hand now opens nothing."""
    raw = base64.urlsafe_b64encode(ADMIN_TOKEN.encode()).decode().rstrip("=")
    client.cookies.set(COOKIE, f"v1.{int(time.time())}.nonce.{raw}")
    r = client.get("/console/")
    assert r.status_code == 303 and r.headers["location"].startswith("/console/signin")


def test_signout_drops_cookie(client: TestClient) -> None:
    csrf = sign_in(client)
    r = post(client, "/signout", csrf)
    assert r.status_code == 303
    assert r.headers["location"] == "/console/signin?done=signedout"
    assert f'{COOKIE}=""' in r.headers["set-cookie"]
    assert client.get("/console/").status_code == 303
    assert "Signed out." in client.get("/console/signin?done=signedout").text


# ----- CSRF and headers -------------------------------------------------------------------------
def test_post_without_valid_csrf_refused(client: TestClient) -> None:
    csrf = sign_in(client)
    other = sessions_of(client).start(ADMIN_TOKEN).csrf
    for bad in ("", "0" * 64, other):
        r = post(client, "/partition/add", bad, p="a", add_text="should not be stored")
        assert r.status_code == 403
        assert "CSRF token is missing or belongs to another session" in r.text
    r = client.post("/console/partition/add", data={"p": "a", "add_text": "no csrf"},
                    headers=ORIGIN)
    assert r.status_code == 403
    assert items_of(client, "a") == []
    assert add(client, csrf, "a", "with the right token") == 1


def test_post_from_another_origin_refused(client: TestClient) -> None:
    csrf = sign_in(client)
    for headers in ({"Origin": "http://evil.example"}, {"Origin": "null"}, {},
                    {"Referer": "http://evil.example/console/"},
                    {"Origin": "http://127.0.0.1:9999"}):
        r = client.post("/console/partition/add",
                        data={"csrf": csrf, "p": "a", "add_text": "cross-site"}, headers=headers)
        assert r.status_code == 403, headers
        assert "cross-site request refused" in r.text
    r = client.post("/console/signin", data={"token": ADMIN_TOKEN},
                    headers={"Origin": "http://evil.example"})
    assert r.status_code == 403
    assert items_of(client, "a") == []
    r = client.post("/console/partition/add",
                    data={"csrf": csrf, "p": "a", "add_text": "same site, by Referer"},
                    headers={"Referer": f"{BASE}/console/partition?p=a"})
    assert r.status_code == 303


def test_forms_accept_only_urlencoded_within_limit(client: TestClient) -> None:
    csrf = sign_in(client)
    r = client.post("/console/partition/add", content=json.dumps({"csrf": csrf}),
                    headers={**ORIGIN, "Content-Type": "application/json"})
    assert r.status_code == 400 and "only URL-encoded forms" in r.text
    r = post(client, "/partition/add", csrf, p="a", add_text="x" * 70_000)
    assert r.status_code == 413
    assert items_of(client, "a") == []


def test_every_response_is_uncached_and_locked_down(client: TestClient) -> None:
    responses = [client.get("/console/signin"), client.get("/console/"),
                 client.get("/console/static/console.css"), client.get("/console/nope")]
    csrf = sign_in(client)
    add(client, csrf, "a", "one fact")
    responses += [client.get(p) for p in PAGES]
    responses.append(post(client, "/partition/recall", csrf, p="a", text="", max_bytes="99"))
    for r in responses:
        assert r.headers["cache-control"] == "no-store", r.url
        csp = r.headers["content-security-policy"]
        assert "default-src 'none'" in csp and "frame-ancestors 'none'" in csp
        assert r.headers["x-content-type-options"] == "nosniff"
    assert [r.status_code for r in responses] == [200, 303, 200, 404] + [200] * 7


def test_unknown_console_page_is_html_404(client: TestClient) -> None:
    sign_in(client)
    r = client.get("/console/nope")
    assert r.status_code == 404
    assert r.headers["content-type"].startswith("text/html")
    assert "There is no such console page." in r.text


def test_pages_load_nothing_from_outside(client: TestClient) -> None:
    csrf = sign_in(client)
    add(client, csrf, "a", "one fact")
    for path in PAGES[:3] + PAGES[4:]:
        page = client.get(path).text
        refs = re.findall(r'(?:src|href|action)="([^"]*)"', page)
        assert refs, path
        assert all(ref.startswith(("/console/", "#")) for ref in refs), (path, refs)
    for asset in ("console.css", "console.js"):
        r = client.get(f"/console/static/{asset}")
        assert r.status_code == 200
        assert "http://" not in r.text and "https://" not in r.text and "@import" not in r.text


# ----- pages and forms --------------------------------------------------------------------------
def test_partitions_page_counts_last_update_and_prefix(client: TestClient) -> None:
    csrf = sign_in(client)
    add(client, csrf, "team-a", "first")
    add(client, csrf, "team-a", "second")
    add(client, csrf, "team-b", "third")
    add(client, csrf, "solo", "fourth")
    page = text_of(client.get("/console/").text)
    assert "3 partitions." in page
    assert re.search(r"solo 1 \d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC team-a 2 .* team-b 1 ", page)
    page = text_of(client.get("/console/?prefix=team-").text)
    assert "2 partitions starting with “team-”." in page
    assert "solo" not in page.split("Partition Items Last update")[1]


def test_partitions_page_is_paged(client: TestClient, monkeypatch: pytest.MonkeyPatch) -> None:
    # A small page size instead of 51 partitions: the paging is the point, not the count.
    monkeypatch.setattr(data, "PARTITIONS_PAGE_SIZE", 2)
    csrf = sign_in(client)
    for name in ("p1", "p2", "p3", "p4", "p5"):
        add(client, csrf, name, f"fact of {name}")
    first = client.get("/console/").text
    assert "Page 1 of 3" in first and ">p1<" in first and ">p3<" not in first
    third = client.get("/console/?page=3").text
    assert ">p5<" in third and ">p4<" not in third and 'rel="next"' not in third
    assert ">p5<" in client.get("/console/?page=99").text  # clamped to the last page


def test_partition_page_lists_items_newest_first_paged(client: TestClient) -> None:
    csrf = sign_in(client)
    for i in range(1, data.PAGE_SIZE + 3):
        add(client, csrf, "big", f"fact number {i}")
    page = client.get("/console/partition?p=big").text
    numbers = [int(n) for n in re.findall(r'id="item-(\d+)"', page)]
    assert numbers == list(range(data.PAGE_SIZE + 2, 2, -1))
    assert "Page 1 of 2" in page
    page2 = client.get("/console/partition?p=big&page=2").text
    assert [int(n) for n in re.findall(r'id="item-(\d+)"', page2)] == [2, 1]
    assert 'id="item-count">27<' in page


def _listed(page: str) -> dict[int, str]:
    """The partition page's listed items: number → the item's visible text."""
    return {int(n): text_of(body) for n, body in re.findall(
        r'<li class="item[^"]*" id="item-(\d+)">(.*?)</li>', page, re.DOTALL)}


def test_partition_page_shows_metadata_and_filters_its_list_by_it(
        client: TestClient, monkeypatch: pytest.MonkeyPatch) -> None:
    csrf = sign_in(client)
    metas = [{"user": "ann", "run": 3}, {"user": "bob", "run": 3},
             {"user": "ann", "run": "3"}, None]
    for i, meta in enumerate(metas, 1):
        assert add(client, csrf, "m", f"fact {i}") == i
        if meta is not None:
            r = client.patch("/admin/items", params={"partition": "m", "n": i},
                             json={"metadata": meta}, headers=ADMIN)
            assert r.status_code == 200, r.text
    shown = _listed(client.get("/console/partition?p=m").text)
    assert list(shown) == [4, 3, 2, 1]  # no filter: every item, each with its metadata
    assert 'run=3 user="ann"' in shown[1] and 'run="3" user="ann"' in shown[3]
    assert "user=" not in shown[4]
    for typed, want in (("user=ann\nrun=3", [1]), ('run="3"', [3]), ("user=ann", [3, 1]),
                        (" run = 3 ", [])):  # a key is taken as typed: " run " is no key
        r = client.get("/console/partition", params={"p": "m", "meta": typed})
        if typed.startswith(" "):
            assert r.status_code == 422 and "metadata keys are" in text_of(r.text)
            continue
        assert r.status_code == 200 and list(_listed(r.text)) == want, typed
        assert f"{len(want)} of 4 items match." in text_of(r.text)
        kept = re.search(r'<textarea id="meta"[^>]*>(.*?)</textarea>', r.text, re.DOTALL)
        assert kept and html.unescape(kept.group(1)) == typed.strip()  # the form keeps it
    r = client.get("/console/partition", params={"p": "m", "meta": "user=nobody"})
    assert _listed(r.text) == {} and "No items match this filter." in text_of(r.text)
    r = client.get("/console/partition", params={"p": "m", "meta": "no-equals"})
    assert r.status_code == 422 and "a metadata filter takes key=value" in text_of(r.text)
    # the pages of a filtered list stay filtered
    monkeypatch.setattr(data, "PAGE_SIZE", 1)
    r = client.get("/console/partition", params={"p": "m", "meta": "user=ann"})
    assert list(_listed(r.text)) == [3] and "Page 1 of 2" in r.text
    found = re.search(r'href="([^"]+)" rel="next"', r.text)
    assert found
    assert list(_listed(client.get(html.unescape(found.group(1))).text)) == [1]
    item = client.get("/console/item?p=m&n=2").text
    assert 'id="item-metadata"' in item and 'run=3 user="bob"' in text_of(item)


def test_add_reports_existing_and_refuses_blank(client: TestClient) -> None:
    csrf = sign_in(client)
    assert add(client, csrf, "a", "Tea at five", note="British habit") == 1
    r = post(client, "/partition/add", csrf, p="a", add_text="  tea AT five ")
    assert r.headers["location"] == "/console/partition?p=a&done=existing&n=1"
    assert "That text is already item #1" in client.get(r.headers["location"]).text
    r = post(client, "/partition/add", csrf, p="a", add_text="   ")
    assert r.status_code == 422
    assert "Not added: text must not be empty or blank" in r.text
    assert [(i["n"], i["text"], i.get("note")) for i in items_of(client, "a")] == [
        (1, "Tea at five", "British habit")]


def test_search_shows_ranked_items_with_scores(client: TestClient) -> None:
    csrf = sign_in(client)
    add(client, csrf, "a", "Bob plays the cello on Sundays")
    add(client, csrf, "a", "Bob is allergic to peanuts")
    add(client, csrf, "a", "The office moved to Lyon")
    r = post(client, "/partition/search", csrf, p="a", q="peanuts allergy", limit="2")
    assert r.status_code == 200
    hits = re.findall(r'<span class="n">#(\d+)</span>\s*<span class="score"[^>]*>score '
                      r'(-?[\d.]+)</span>', r.text)
    assert len(hits) == 2 and hits[0][0] == "2"
    assert float(hits[0][1]) > float(hits[1][1])
    assert "2 of 3 items, best first" in text_of(r.text)
    r = post(client, "/partition/search", csrf, p="a", q="x", limit="99")
    assert r.status_code == 400 and "limit must be a whole number from 1 to 50" in r.text


def test_recall_preview_is_the_hosts_body_within_budget(client: TestClient) -> None:
    csrf = sign_in(client)
    add(client, csrf, "a", "Carol drinks oolong tea", note="every morning")
    add(client, csrf, "a", "Carol's tea shop is in Kyoto")
    add(client, csrf, "a", "The quarterly report is due Friday")
    r = post(client, "/partition/recall", csrf, p="a", text="tea for Carol", max_bytes="60")
    assert r.status_code == 200
    shown = html.unescape(re.search(r'<pre class="wire" id="recall-text">(.*?)</pre>',
                                    r.text, re.S).group(1))  # type: ignore[union-attr]
    body = json.loads(html.unescape(re.search(
        r'Response body \((\d+) bytes\)</summary><pre class="wire">(.*?)</pre>', r.text,
        re.S).group(2)))  # type: ignore[union-attr]
    assert shown == body["text"]
    assert len(shown.encode()) <= 60
    assert f'<strong id="recall-bytes">{len(shown.encode())}</strong> of 60 bytes' in r.text
    assert [line.split(". ")[0] for line in shown.split("\n")] == [s["id"]
                                                                   for s in body["sources"]]
    assert "oolong" in shown or "Kyoto" in shown
    # The same recall through the provider endpoint answers the same text and sources.
    via_host = client.post("/memory", json=recall("tea for Carol", max_bytes=60, partition="a"),
                           headers=AUTH).json()
    assert (via_host["text"], via_host["sources"]) == (body["text"], body["sources"])
    r = post(client, "/partition/recall", csrf, p="a", text="", max_bytes="20000")
    assert r.status_code == 400
    assert "max_bytes must be a whole number from 1 to 16384" in r.text


def test_edit_saves_text_note_status_and_surfacing(client: TestClient) -> None:
    csrf = sign_in(client)
    add(client, csrf, "a", "Dan lives in Oslo", note="2019")
    page = client.get("/console/item?p=a&n=1").text
    cursor = re.search(r'name="cursor" value="([^"]+)"', page).group(1)  # type: ignore[union-attr]
    r = post(client, "/item", csrf, p="a", n="1", cursor=cursor, text="Dan lives in Bergen",
             note="moved 2024", status="inactive", surfacing="hold")
    assert r.status_code == 303
    assert r.headers["location"] == "/console/partition?p=a&done=edited&n=1"
    [item] = items_of(client, "a")
    assert (item["text"], item["note"], item["status"], item["surfacing"], item["revision"]) == (
        "Dan lives in Bergen", "moved 2024", "inactive", "hold", 2)
    page = client.get("/console/partition?p=a").text
    assert "not recalled" in page
    cursor = re.search(r'name="cursor" value="([^"]+)"',
                       client.get("/console/item?p=a&n=1").text).group(1)  # type: ignore[union-attr]
    r = post(client, "/item", csrf, p="a", n="1", cursor=cursor, text="Dan lives in Bergen",
             note="", status="", surfacing="")
    assert r.status_code == 303
    [item] = items_of(client, "a")
    assert set(item) == {"n", "text", "ts", "updated", "revision"}  # fields cleared
    r = post(client, "/item", csrf, p="a", n="1", cursor="", text="Dan lives in Bergen",
             note="", status="", surfacing="")
    assert r.headers["location"] == "/console/partition?p=a&done=unchanged&n=1"


def test_edit_conflicts_when_item_changed_since_form(client: TestClient) -> None:
    csrf = sign_in(client)
    add(client, csrf, "a", "Eve works at the bakery")
    page = client.get("/console/item?p=a&n=1").text
    cursor = re.search(r'name="cursor" value="([^"]+)"', page).group(1)  # type: ignore[union-attr]
    r = client.post("/memory", json=tool("update", {"n": 1, "text": "Eve owns the bakery"},
                                          partition="a"), headers=AUTH)
    assert r.status_code == 200
    r = post(client, "/item", csrf, p="a", n="1", cursor=cursor, text="Eve left the bakery",
             note="", status="", surfacing="")
    assert r.status_code == 409
    text = text_of(r.text)
    assert "Item #1 was changed by someone else after you opened it" in text
    assert "Current version (revision 2) Eve owns the bakery" in text
    assert ">Eve left the bakery</textarea>" in r.text  # the owner's edit is kept
    assert [i["text"] for i in items_of(client, "a")] == ["Eve owns the bakery"]
    fresh = re.search(r'name="cursor" value="([^"]+)"', r.text).group(1)  # type: ignore[union-attr]
    r = post(client, "/item", csrf, p="a", n="1", cursor=fresh, text="Eve left the bakery",
             note="", status="", surfacing="")
    assert r.status_code == 303
    assert [i["text"] for i in items_of(client, "a")] == ["Eve left the bakery"]


def test_edit_and_forget_unknown_item_not_found(client: TestClient) -> None:
    csrf = sign_in(client)
    add(client, csrf, "a", "only item")
    r = client.get("/console/item?p=a&n=7")
    assert r.status_code == 404 and "item 7 is not in this partition" in r.text
    r = post(client, "/item/forget", csrf, p="a", n="7")
    assert r.status_code == 404 and "item 7 does not exist in this memory" in r.text
    r = post(client, "/item", csrf, p="a", n="0", text="x")
    assert r.status_code == 400 and "n must be a whole number" in r.text


def test_forget_removes_item_and_keeps_number(client: TestClient) -> None:
    csrf = sign_in(client)
    add(client, csrf, "a", "first")
    add(client, csrf, "a", "second")
    page = client.get("/console/partition?p=a").text
    cursor = re.search(r'name="cursor" value="([^"]+)"', page).group(1)  # type: ignore[union-attr]
    r = post(client, "/item/forget", csrf, p="a", n="2", cursor=cursor)
    assert r.headers["location"] == "/console/partition?p=a&done=forgot&n=2"
    assert [i["n"] for i in items_of(client, "a")] == [1]
    assert add(client, csrf, "a", "third") == 3
    # The page's cursor predates item 1's edit below: forgetting it from that page conflicts.
    client.post("/memory", json=tool("update", {"n": 1, "text": "first, edited"}, partition="a"),
                headers=AUTH)
    r = post(client, "/item/forget", csrf, p="a", n="1", cursor=cursor)
    assert r.status_code == 409 and "changed after your recall" in r.text
    assert [i["n"] for i in items_of(client, "a")] == [1, 3]


def test_export_downloads_jsonl(client: TestClient) -> None:
    csrf = sign_in(client)
    add(client, csrf, "a/b c", "line one", note="n1")
    add(client, csrf, "a/b c", "line two")
    r = client.get("/console/export", params={"p": "a/b c"})
    assert r.status_code == 200
    assert r.headers["content-type"] == "application/x-ndjson"
    assert re.fullmatch(r'attachment; filename="semmem-a-b-c-[0-9a-f]{8}\.jsonl"',
                        r.headers["content-disposition"])
    records = [json.loads(line) for line in r.text.splitlines()]
    assert [(x["n"], x["text"], x.get("note")) for x in records] == [
        (1, "line one", "n1"), (2, "line two", None)]
    admin = client.get("/admin/export", params={"partition": "a/b c"},
                       headers={"Authorization": f"Bearer {ADMIN_TOKEN}"})
    assert r.content == admin.content


def test_delete_needs_exact_confirmation(client: TestClient) -> None:
    csrf = sign_in(client)
    add(client, csrf, "doomed", "a fact")
    page = client.get("/console/delete?p=doomed")
    assert page.status_code == 200
    assert '<code id="phrase">doomed</code>' in page.text
    for wrong in ("", "Doomed", "doomed "):
        r = post(client, "/delete", csrf, p="doomed", confirm=wrong)
        assert r.status_code == 400
        assert "The confirmation does not match; nothing was deleted." in r.text
    assert len(items_of(client, "doomed")) == 1
    r = post(client, "/delete", csrf, p="doomed", confirm="doomed")
    assert r.headers["location"] == "/console/?done=deleted"
    assert items_of(client, "doomed") == []
    listing = client.get("/console/?done=deleted").text
    assert "Partition deleted." in listing and ">doomed<" not in listing


@pytest.mark.parametrize("partition", ["x' OR '1'='1", "<script>alert(1)</script>",
                                       "a&b=c?d#e", "ユーザー/42", "tab\there"])
def test_hostile_partition_names_are_just_names(client: TestClient, partition: str) -> None:
    csrf = sign_in(client)
    add(client, csrf, partition, "fact of a strange partition")
    page = client.get("/console/partition", params={"p": partition})
    assert page.status_code == 200
    assert "<script>alert" not in page.text
    assert partition in html.unescape(page.text)
    assert [i["text"] for i in items_of(client, partition)] == ["fact of a strange partition"]
    phrase = data.confirm_phrase(partition)
    assert phrase == partition or (phrase.startswith("partition-") and "\t" in partition)
    r = post(client, "/delete", csrf, p=partition, confirm=phrase)
    assert r.status_code == 303
    assert items_of(client, partition) == []


def test_console_calls_count_in_metrics(client: TestClient) -> None:
    csrf = sign_in(client)
    add(client, csrf, "a", "counted")
    metrics = client.get("/metrics").text
    assert re.search(r'semmem_requests_total\{operation="admin",status="200",tool=""\} [1-9]',
                     metrics)


def test_console_answers_unavailable_when_store_failed(tmp_path: Path) -> None:
    blocker = tmp_path / "not-a-directory"
    blocker.write_text("a file where the store should be")
    with console_client(blocker / "db") as c:
        deadline = time.monotonic() + 30
        while "failed to load" not in c.get("/readyz").text:  # not merely "starting"
            assert time.monotonic() < deadline
            time.sleep(0.02)
        csrf = sign_in_without_pages(c)
        r = c.get("/console/")
        assert r.status_code == 503
        assert "not ready: the model or the store failed to load" in r.text
        assert r.headers["retry-after"] == "2"
        r = post(c, "/partition/add", csrf, p="a", add_text="x")
        assert r.status_code == 503


async def test_partitions_page_reads_indexed_partitions_without_their_items(
        tmp_path: Path) -> None:
    """Past the store's index threshold a partition's count and last update come from the read
    view and one recent item, not from loading the partition."""
    from semmem.memory import Memory
    from semmem.store import Store

    embedder = HashingEmbedder()
    store = Store(str(tmp_path / "db"), dim=embedder.dim, model_id=embedder.model_id,
                  index_threshold=5)
    await store.open()
    memory = Memory(store, embedder)
    try:
        await memory.import_("big", ({"text": f"fact {i}", "updated": 1_000 + i}
                                     for i in range(12)))
        await memory.remember("small", "one fact")
        await memory.forget("big", 3)
        rows, paging = await data.partitions_page(memory, "", 1)
        assert (await store.read_view("big")).indexed
        big = await store.snapshot("big")
        assert [(r.name, r.count) for r in rows] == [("big", 11), ("small", 1)]
        assert rows[0].last_update == max(it.updated for it in big.items) == 1_011
        assert rows[1].last_update == (await store.snapshot("small")).items[0].updated
        assert paging == data.Paging(1, 1, 2, data.PARTITIONS_PAGE_SIZE)
    finally:
        await store.close()


def test_rotated_admin_tokens_file_ends_old_sessions(tmp_path: Path) -> None:
    tokens = tmp_path / "admin-tokens"
    tokens.write_text("# admins\n")  # no token yet: the console is there, nobody gets in
    with console_client(tmp_path / "db", admin_tokens=None, admin_tokens_file=tokens) as c:
        wait_ready(c)
        r = c.post("/console/signin", data={"token": "first-admin-token"}, headers=ORIGIN)
        assert r.status_code == 401
        tokens.write_text("# admins\nfirst-admin-token\n")
        time.sleep(1.2)  # the file is looked at for changes at most once a second
        csrf = sign_in(c, "first-admin-token")
        assert c.get("/console/").status_code == 200
        tokens.write_text("# admins, rotated\nsecond-admin-token\n")
        time.sleep(1.2)
        r = c.get("/console/")
        assert r.status_code == 303 and r.headers["location"].startswith("/console/signin")
        r = post(c, "/partition/add", csrf, p="a", add_text="after revocation")
        assert r.status_code == 303 and r.headers["location"] == "/console/signin"
        sign_in(c, "second-admin-token")
        assert c.get("/console/").status_code == 200
        listed = c.get("/admin/items", params={"partition": "a"},
                       headers={"Authorization": "Bearer second-admin-token"})
        assert listed.json()["items"] == []


# ----- quotas -----------------------------------------------------------------------------------
def test_partition_page_shows_quota_usage_and_refuses_past_it(tmp_path: Path) -> None:
    with console_client(tmp_path / "db", partition_max_items=1, partition_max_bytes=100) as c:
        wait_ready(c)
        csrf = sign_in(c)
        add(c, csrf, "qa", "twelve bytes")
        page = text_of(c.get("/console/partition", params={"p": "qa"}).text)
        assert "Item quota 1 of 1" in page and "Text bytes 12 of 100" in page
        refused = post(c, "/partition/add", csrf, p="qa", add_text="one too many")
        assert refused.status_code != 303
        assert "this memory is full" in text_of(refused.text)
        assert [it["text"] for it in items_of(c, "qa")] == ["twelve bytes"]


LONG = "k" * 3000  # past the 1,024-byte bound


def test_an_over_long_key_is_refused_on_every_surface_that_would_make_or_read_it(
        client: TestClient) -> None:
    """The console's forms and the admin API's optional partition query skipped the bound:
    a 3,000-character key was created through the console (then neither could open it)."""
    csrf = sign_in(client)
    for path, fields in [("/partition/add", {"add_text": "a fact"}),
                         ("/partition/search", {"q": "fact"}),
                         ("/partition/recall", {"text": "fact"}),
                         ("/retention", {"policy": "30d"}),
                         ("/retention/preview", {"policy": "30d"})]:
        r = post(client, path, csrf, p=LONG, **fields)
        assert r.status_code == 400, (path, r.status_code)
        assert "at most 1024 UTF-8 bytes" in r.text and "kkkk" not in r.text, path
    for path, params in [("/admin/retention", {}), ("/admin/retention/preview",
                                                    {"policy": "30d"})]:
        r = client.get(path, params={"partition": LONG, **params}, headers=ADMIN)
        error = assert_error(r, 400, "invalid_request")
        assert "at most 1024 UTF-8 bytes" in error["message"] and "kkkk" not in error["message"]
    assert client.get("/admin/partitions", headers=ADMIN).json()["partitions"] == []
    assert add(client, csrf, "k" * 1024, "at the bound") == 1  # the bound itself is a key


def test_an_owner_opens_and_deletes_an_over_long_partition_made_before(tmp_path: Path) -> None:
    """A partition older code made with a key past the bound can be opened and deleted by its
    owner (the console and ``DELETE /admin/partitions`` used to answer 400 for it)."""

    async def made_by_old_code() -> None:
        memory = await open_memory(tmp_path / "db", HashingEmbedder())
        try:
            await memory.store.conn.table(LONG, create=True)  # as if no check had run
            await memory.remember(LONG, "the fact of a long key")
        finally:
            await memory.close()

    asyncio.run(made_by_old_code())
    with console_client(tmp_path / "db") as c:
        wait_ready(c)
        csrf = sign_in(c)
        assert c.get("/admin/partitions", headers=ADMIN).json()["partitions"] == [LONG]
        page = c.get("/console/partition", params={"p": LONG})
        assert page.status_code == 200 and "the fact of a long key" in page.text
        assert c.get("/console/delete", params={"p": LONG}).status_code == 200
        r = c.get("/admin/items", params={"partition": LONG}, headers=ADMIN)
        assert [i["text"] for i in r.json()["items"]] == ["the fact of a long key"]
        r = c.delete("/admin/partitions", params={"partition": LONG}, headers=ADMIN)
        assert r.status_code == 200 and r.json()["deleted"] is True
        assert c.get("/admin/partitions", headers=ADMIN).json()["partitions"] == []
        # gone, it is a key past the bound like any other
        r = c.delete("/admin/partitions", params={"partition": LONG}, headers=ADMIN)
        assert_error(r, 400, "invalid_request")
        assert post(c, "/delete", csrf, p=LONG, confirm=data.confirm_phrase(LONG)
                    ).status_code == 400
