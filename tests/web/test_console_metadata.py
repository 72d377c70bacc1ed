"""The console sets and edits a fact's metadata: the add form's box, the edit form's box (the
item's pairs as ``key=value`` lines, saved under the form's cursor), clearing it, refusals."""

from __future__ import annotations

import html
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import lance
import pytest
from hypothesis import example, given
from hypothesis import strategies as st
from starlette.testclient import TestClient
from typer.testing import CliRunner

from semmem.cli.commands import app
from semmem.cli.scoped import metadata as cli_metadata
from semmem.items.metadata import KEY_PATTERN, MAX_KEYS, canonical, clean_metadata, tags
from semmem.store.rows import table_name
from semmem.web.console import data
from tests.support.server import ADMIN, AUTH
from tests.support.web import tool, wait_ready
from tests.web.test_console import (
    _listed,
    console_client,
    items_of,
    post,
    sign_in,
    text_of,
)


@pytest.fixture
def db(tmp_path: Path) -> Path:
    """The store's directory."""
    return tmp_path / "db"


@pytest.fixture
def client(db: Path) -> Iterator[TestClient]:
    """A console client (the provider's tools taking metadata and filters), not signed in."""
    with console_client(db, tool_metadata=True) as c:
        wait_ready(c)
        yield c


def _add(client: TestClient, csrf: str, text: str, meta: str) -> int:
    r = post(client, "/partition/add", csrf, p="m", add_text=text, add_note="", add_meta=meta)
    assert r.status_code == 303, r.text
    found = re.search(r"done=added&n=(\d+)", r.headers["location"])
    assert found, r.headers["location"]
    return int(found.group(1))


def _form(client: TestClient, n: int) -> tuple[str, str]:
    """The edit page's cursor and its metadata box, as the browser would submit them."""
    page = client.get("/console/item", params={"p": "m", "n": n}).text
    cursor = re.search(r'name="cursor" value="([^"]+)"', page)
    box = re.search(r'<textarea id="metadata" name="metadata"[^>]*>(.*?)</textarea>', page,
                    re.DOTALL)
    assert cursor and box
    return cursor.group(1), html.unescape(box.group(1))


def _edit(client: TestClient, csrf: str, n: int, cursor: str, meta: str, text: str = "",
          **fields: str) -> Any:
    """Submit item ``n``'s edit form with its other fields as they are (``text`` if given)."""
    item = next(i for i in items_of(client, "m") if i["n"] == n)
    others = {f: item.get(f, "") for f in data.EDITABLE}
    return post(client, "/item", csrf, p="m", n=str(n), cursor=cursor,
                text=text or item["text"], metadata=meta, **{**others, **fields})


def _listing(client: TestClient, meta: str) -> list[int]:
    """The numbers the partition page lists under the metadata filter ``meta``."""
    r = client.get("/console/partition", params={"p": "m", "meta": meta})
    assert r.status_code == 200, r.text
    return list(_listed(r.text))


def _searched(client: TestClient, metadata: dict[str, Any]) -> list[int]:
    """The numbers the provider's search finds under a metadata filter."""
    r = client.post("/memory", json=tool("search", {"query": "tea", "limit": 50,
                                                    "filter": {"metadata": metadata}},
                                         partition="m"), headers=AUTH)
    assert r.status_code == 200, r.text
    return sorted(i["n"] for i in r.json()["result"]["items"])


def _tags(db: Path) -> dict[int, list[str] | None]:
    """The ``tags`` column of the partition's live item rows, by number."""
    uri = str(db / f"{table_name('m')}.lance")
    rows = lance.dataset(uri).to_table(columns=["n", "tags"], filter="kind = 1").to_pylist()
    return {r["n"]: r["tags"] for r in rows}


# ----- the typed form ------------------------------------------------------------------------
_VALUES = (st.booleans() | st.integers(-(2**53), 2**53)
           | st.floats(-(2.0**53), 2.0**53, allow_nan=False)
           | st.text(st.characters(exclude_categories=["Cs"], exclude_characters="\x00"),
                     max_size=40))


@given(st.dictionaries(st.from_regex(KEY_PATTERN, fullmatch=True), _VALUES, max_size=5))
@example({"s": "3", "t": "true", "q": '"x"', "e": "", "sp": " a ", "nl": "a\nb",
          "ls": "a\u2028b", "nan": "NaN", "list": "[1]", "null": "null", "eq": "a=b",
          "n": 3, "f": 0.5, "b": False})
def test_metadata_text_reads_back_as_stored_in_the_console_and_the_cli(
        given_metadata: dict[str, Any]) -> None:
    """What the edit box shows is read back to the same metadata, by the console and by the
    CLI's ``--meta`` (one pair an option), so an edit that changes nothing changes nothing."""
    stored = clean_metadata(given_metadata) or {}
    text = data.metadata_text(stored)
    assert len(text.splitlines()) == len(stored)  # one pair a line, whatever the values
    assert canonical(data.metadata_of(text) or {}) == canonical(stored)
    assert canonical(cli_metadata(text.splitlines()) or {}) == canonical(stored)


def test_typed_values_are_those_of_the_cli() -> None:
    typed = 'user=alice\nrun=3\nscore=0.5\npinned=true\nlabel="7"\nnote=a = b\n\n'
    assert data.metadata_of(typed) == {"user": "alice", "run": 3, "score": 0.5, "pinned": True,
                                       "label": "7", "note": "a = b"}
    assert data.metadata_of(typed) == clean_metadata(cli_metadata(
        ["user=alice", "run=3", "score=0.5", "pinned=true", 'label="7"', "note=a = b"]))
    assert data.metadata_of(" \n ") is None


# ----- adding ----------------------------------------------------------------------------------
def test_add_with_metadata_is_found_by_the_listing_filter_and_the_search(
        client: TestClient, db: Path) -> None:
    csrf = sign_in(client)
    assert _add(client, csrf, "Alice likes green tea", 'user=alice\nrun=3\npinned=true\n'
                'label="7"') == 1
    assert _add(client, csrf, "Bob likes black tea", "user=bob\nrun=3") == 2
    assert _add(client, csrf, "Carol likes tea", "") == 3
    assert _add(client, csrf, "Dan likes tea", 'html=</textarea><b>&"x"') == 4
    by_n = {i["n"]: i.get("metadata") for i in items_of(client, "m")}
    assert by_n == {1: {"user": "alice", "run": 3, "pinned": True, "label": "7"},
                    2: {"user": "bob", "run": 3}, 3: None, 4: {"html": '</textarea><b>&"x"'}}
    assert _tags(db) == {1: tags(by_n[1]), 2: tags(by_n[2]), 3: None, 4: tags(by_n[4])}
    page = client.get("/console/item?p=m&n=4").text
    assert "<b>" not in page and _form(client, 4)[1] == 'html=</textarea><b>&"x"'  # escaped
    assert _listing(client, "user=alice") == [1]
    assert _listing(client, "run=3") == [2, 1]
    assert _listing(client, 'label="7"\npinned=true') == [1]
    assert _listing(client, "label=7") == []  # stored as the string "7", not the number
    assert _searched(client, {"user": "alice", "run": 3}) == [1]
    assert _searched(client, {"run": 3}) == [1, 2]
    assert _searched(client, {"label": 7}) == []
    page = client.get("/console/item?p=m&n=1").text
    assert 'label="7" pinned=true run=3 user="alice"' in text_of(page)  # the badges
    assert _form(client, 1)[1] == 'label="7"\npinned=true\nrun=3\nuser=alice'


def test_adding_a_known_text_with_metadata_says_its_metadata_stays(client: TestClient) -> None:
    csrf = sign_in(client)
    _add(client, csrf, "Alice likes green tea", "user=alice")
    r = post(client, "/partition/add", csrf, p="m", add_text="alice likes GREEN tea",
             add_meta="user=bob")
    assert r.headers["location"] == "/console/partition?p=m&done=existing_meta&n=1"
    assert "its metadata was left as it is" in text_of(client.get(r.headers["location"]).text)
    assert [i["metadata"] for i in items_of(client, "m")] == [{"user": "alice"}]


# ----- editing ---------------------------------------------------------------------------------
def test_edit_replaces_the_metadata_a_filter_finds(client: TestClient, db: Path) -> None:
    csrf = sign_in(client)
    _add(client, csrf, "Alice likes green tea", "user=alice\nrun=3")
    _add(client, csrf, "Bob likes black tea", "user=bob")
    cursor, box = _form(client, 1)
    assert box == "run=3\nuser=alice"
    r = _edit(client, csrf, 1, cursor, "user=carol\nrun=4\n")
    assert r.status_code == 303 and r.headers["location"].endswith("done=edited&n=1")
    [item] = [i for i in items_of(client, "m") if i["n"] == 1]
    assert (item["metadata"], item["revision"], item["text"]) == (
        {"user": "carol", "run": 4}, 2, "Alice likes green tea")
    assert _tags(db)[1] == tags({"user": "carol", "run": 4})
    assert _listing(client, "user=alice") == [] and _listing(client, "run=3") == []
    assert _listing(client, "user=carol\nrun=4") == [1]
    assert _searched(client, {"user": "alice"}) == []
    assert _searched(client, {"user": "carol", "run": 4}) == [1]
    assert _searched(client, {"user": "bob"}) == [2]  # the other fact kept its own
    # the same pairs typed otherwise (order, spaces, 4.0 for 4) change nothing
    cursor, _ = _form(client, 1)
    r = _edit(client, csrf, 1, cursor, "  run=4\n\nuser=carol ")
    assert r.headers["location"].endswith("done=unchanged&n=1")
    r = _edit(client, csrf, 1, cursor, "run=4.0\nuser=carol")
    assert r.headers["location"].endswith("done=unchanged&n=1")
    # text and metadata in one save: one new revision
    r = _edit(client, csrf, 1, cursor, "user=carol", text="Alice likes jasmine tea")
    assert r.status_code == 303
    [item] = [i for i in items_of(client, "m") if i["n"] == 1]
    assert (item["text"], item["metadata"], item["revision"]) == (
        "Alice likes jasmine tea", {"user": "carol"}, 3)


def test_clearing_the_box_removes_the_metadata_and_its_tags(client: TestClient,
                                                             db: Path) -> None:
    csrf = sign_in(client)
    _add(client, csrf, "Alice likes green tea", "user=alice\nrun=3")
    assert _tags(db)[1] == tags({"user": "alice", "run": 3})  # the control: tags to clear
    cursor, _ = _form(client, 1)
    r = _edit(client, csrf, 1, cursor, "\n  \n")
    assert r.status_code == 303 and r.headers["location"].endswith("done=edited&n=1")
    [item] = items_of(client, "m")
    assert "metadata" not in item and item["revision"] == 2
    assert _tags(db) == {1: None}
    for meta in ("user=alice", "run=3", "user=alice\nrun=3"):
        assert _listing(client, meta) == []
    assert _searched(client, {"user": "alice"}) == [] and _searched(client, {"run": 3}) == []
    page = client.get("/console/item?p=m&n=1").text
    assert 'id="item-metadata"' not in page and _form(client, 1)[1] == ""


def test_a_form_without_the_metadata_box_keeps_the_metadata(client: TestClient) -> None:
    """A page from before the box existed, or a script posting the old fields, edits the
    other fields and leaves the metadata as it is (an absent field is not an empty one)."""
    csrf = sign_in(client)
    _add(client, csrf, "Alice likes green tea", "user=alice")
    cursor, _ = _form(client, 1)
    r = post(client, "/item", csrf, p="m", n="1", cursor=cursor, text="Alice likes tea",
             note="", status="", surfacing="")
    assert r.status_code == 303
    assert [(i["text"], i["metadata"]) for i in items_of(client, "m")] == [
        ("Alice likes tea", {"user": "alice"})]


@pytest.mark.parametrize(("meta", "says"), [
    ("\n".join(f"k{i}={i}" for i in range(MAX_KEYS + 1)),
     f"metadata has {MAX_KEYS + 1} keys; at most {MAX_KEYS} are allowed"),
    ("9lives=yes", "metadata keys are 1–64 characters"),
    ("user name=alice", "metadata keys are 1–64 characters"),
    ("user=" + "a" * 257, "metadata.user is over 256 characters"),
    ("user=alice\nno equals sign", "metadata takes key=value, not 'no equals sign'"),
    ("run=NaN", "metadata.run must be a finite number"),
    ("deep=" + "[" * 1_000, "metadata.deep is over 256 characters"),  # was a RecursionError
])
def test_bad_metadata_shows_the_form_again_and_stores_nothing(
        client: TestClient, db: Path, meta: str, says: str) -> None:
    csrf = sign_in(client)
    r = post(client, "/partition/add", csrf, p="m", add_text="Dan likes tea", add_note="tea",
             add_meta=meta)
    assert r.status_code == 422 and f"Not added: {says}" in text_of(r.text)
    kept = re.search(r'<textarea id="add_meta"[^>]*>(.*?)</textarea>', r.text, re.DOTALL)
    assert kept and html.unescape(kept.group(1)) == meta  # the owner's input, as typed
    assert 'value="tea"' in r.text and ">Dan likes tea</textarea>" in r.text
    assert items_of(client, "m") == []
    _add(client, csrf, "Alice likes green tea", "user=alice")
    before, tags_before = items_of(client, "m"), _tags(db)
    cursor, _ = _form(client, 1)
    r = _edit(client, csrf, 1, cursor, meta, text="Alice likes black tea", note="changed")
    assert r.status_code == 422 and says in text_of(r.text)
    box = re.search(r'<textarea id="metadata"[^>]*>(.*?)</textarea>', r.text, re.DOTALL)
    assert box and html.unescape(box.group(1)) == meta
    assert ">Alice likes black tea</textarea>" in r.text and ">changed</textarea>" in r.text
    assert items_of(client, "m") == before and _tags(db) == tags_before  # nothing saved


def test_edit_of_metadata_conflicts_when_the_item_changed_since_the_form(
        client: TestClient) -> None:
    csrf = sign_in(client)
    _add(client, csrf, "Eve works at the bakery", "user=eve")
    cursor, _ = _form(client, 1)
    r = client.patch("/admin/items", params={"partition": "m", "n": 1},
                     json={"metadata": {"user": "eve", "shift": "early"}}, headers=ADMIN)
    assert r.status_code == 200, r.text
    r = _edit(client, csrf, 1, cursor, "user=eve\nshift=late")
    assert r.status_code == 409
    text = text_of(r.text)
    assert "Item #1 was changed by someone else after you opened it" in text
    assert 'Current version (revision 2) Eve works at the bakery shift="early" user="eve"' in text
    box = re.search(r'<textarea id="metadata"[^>]*>(.*?)</textarea>', r.text, re.DOTALL)
    assert box and html.unescape(box.group(1)) == "user=eve\nshift=late"  # the edit is kept
    assert [i["metadata"] for i in items_of(client, "m")] == [{"user": "eve", "shift": "early"}]
    fresh = re.search(r'name="cursor" value="([^"]+)"', r.text)
    assert fresh
    r = _edit(client, csrf, 1, fresh.group(1), "user=eve\nshift=late")  # saved knowingly
    assert r.status_code == 303
    assert [i["metadata"] for i in items_of(client, "m")] == [{"user": "eve", "shift": "late"}]


def test_metadata_forms_need_the_session_and_its_csrf_token(client: TestClient) -> None:
    csrf = sign_in(client)
    _add(client, csrf, "Alice likes green tea", "user=alice")
    cursor, _ = _form(client, 1)
    fields = {"p": "m", "n": "1", "cursor": cursor, "text": "Alice likes green tea",
              "metadata": "user=mallory"}
    for headers, form in (({"Origin": "http://127.0.0.1:8080"}, fields),
                          ({"Origin": "http://evil.example"}, {"csrf": csrf, **fields})):
        r = client.post("/console/item", data=form, headers=headers)
        assert r.status_code == 403
    r = client.post("/console/partition/add", headers={"Origin": "http://127.0.0.1:8080"},
                    data={"p": "m", "add_text": "Mallory", "add_meta": "user=mallory"})
    assert r.status_code == 403
    client.cookies.clear()
    r = post(client, "/item", csrf, **fields)
    assert r.status_code == 303 and r.headers["location"].startswith("/console/signin")
    assert [(i["n"], i["metadata"]) for i in items_of(client, "m")] == [(1, {"user": "alice"})]


def test_a_refused_edit_keeps_the_cursor_of_the_form_it_came_from(client: TestClient) -> None:
    """After bad input the form is shown again with the cursor it was opened with, so a change
    someone made since still conflicts when the corrected form is saved (the page used to carry
    the state of the refused save's time, and the second save overwrote that change unseen)."""
    csrf = sign_in(client)
    _add(client, csrf, "Eve works at the bakery", "user=eve")
    cursor, _ = _form(client, 1)
    r = client.patch("/admin/items", params={"partition": "m", "n": 1},
                     json={"text": "Eve owns the bakery"}, headers=ADMIN)
    assert r.status_code == 200, r.text
    r = _edit(client, csrf, 1, cursor, "user=eve\nno equals sign", text="Eve left the bakery")
    assert r.status_code == 422
    kept = re.search(r'name="cursor" value="([^"]+)"', r.text)
    assert kept and kept.group(1) == cursor
    r = _edit(client, csrf, 1, kept.group(1), "user=eve", text="Eve left the bakery")
    assert r.status_code == 409 and "Current version (revision 2)" in text_of(r.text)
    assert [i["text"] for i in items_of(client, "m")] == ["Eve owns the bakery"]


def test_a_deeply_bracketed_value_is_refused_by_the_filter_and_the_cli(
        client: TestClient, tmp_path: Path) -> None:
    """``k=[[[…`` is text, never a nesting to descend: a clear refusal, no RecursionError."""
    csrf = sign_in(client)
    _add(client, csrf, "Alice likes tea", "deep=[[1]]")  # brackets read as text, as before
    assert [i["metadata"] for i in items_of(client, "m")] == [{"deep": "[[1]]"}]
    deep = "deep=" + "[" * 1_000
    r = client.get("/console/partition", params={"p": "m", "meta": deep})
    assert r.status_code == 422 and "metadata.deep is over 256 characters" in text_of(r.text)
    result = CliRunner().invoke(app, ["forget-matching", "-p", "m", "--meta", deep],
                                env={"SEMMEM_DATA": str(tmp_path / "cli-db")})
    assert result.exit_code == 1 and isinstance(result.exception, SystemExit), result.exception
    assert result.stderr == "error: metadata.deep is over 256 characters\n"
