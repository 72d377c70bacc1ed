"""The owner console in a real browser: Debian's Chromium, driven by Selenium, against a real
``semmem serve`` process on 127.0.0.1 (with the fake embedder).

Needs ``chromium`` and ``chromium-driver`` (``scripts/ensure-browser.sh`` installs them; CI runs
it). The browser may resolve no host but 127.0.0.1, so nothing leaves the machine. Screenshots
go to the test's temporary folder, or to ``$SEMMEM_SCREENSHOTS`` when set (that is how
``docs/console.png`` is made).
"""

from __future__ import annotations

import base64
import json
import os
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from semmem.web.console.session import COOKIE
from tests.support.server import ADMIN_TOKEN, TOKEN, ServerProcess

CHROMIUM = "/usr/bin/chromium"
CHROMEDRIVER = "/usr/bin/chromedriver"

if not (os.access(CHROMIUM, os.X_OK) and os.access(CHROMEDRIVER, os.X_OK)):
    pytest.skip("Debian's chromium and chromium-driver are not installed: run "
                "scripts/ensure-browser.sh (as root; `make test` does)", allow_module_level=True)
webdriver = pytest.importorskip("selenium.webdriver", reason="selenium is not installed "
                                "(a dev dependency: pip install -c requirements.lock selenium)")

from selenium.webdriver.chrome.service import Service  # noqa: E402
from selenium.webdriver.common.by import By  # noqa: E402
from selenium.webdriver.common.keys import Keys  # noqa: E402
from selenium.webdriver.remote.webdriver import WebDriver  # noqa: E402
from selenium.webdriver.support import expected_conditions as ec  # noqa: E402

from tests.support.browser import (  # noqa: E402
    WAIT_S,
    assert_real_picture,
    fill,
    item_numbers,
    mark_page,
    shoot,
    sign_in,
    submit,
    text,
    wait,
    wait_for_next_page,
)

pytestmark = pytest.mark.timeout(180)


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    """``semmem serve`` in its own process, with provider and admin tokens."""
    proc = ServerProcess(tmp_path_factory.mktemp("console") / "db").start()
    try:
        proc.wait_ready()
        yield proc
    finally:
        proc.stop()


@pytest.fixture(scope="module")
def downloads(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Where the browser saves downloads."""
    return tmp_path_factory.mktemp("downloads")


@pytest.fixture(scope="module")
def shots(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Where screenshots go."""
    target = os.environ.get("SEMMEM_SCREENSHOTS")
    if target:
        Path(target).mkdir(parents=True, exist_ok=True)
        return Path(target)
    return tmp_path_factory.mktemp("screenshots")


@pytest.fixture(scope="module")
def browser(tmp_path_factory: pytest.TempPathFactory, downloads: Path) -> Iterator[WebDriver]:
    """Headless Chromium that can reach 127.0.0.1 and nothing else."""
    # Selenium Manager (driver/browser discovery, usage stats) must never run: both paths are
    # given, and these say so again.
    os.environ.setdefault("SE_OFFLINE", "true")
    os.environ.setdefault("SE_AVOID_STATS", "true")
    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for arg in (
        "--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu",
        "--window-size=1280,1000", "--no-first-run", "--no-default-browser-check",
        "--disable-background-networking", "--disable-component-update", "--disable-sync",
        "--disable-extensions", "--disable-default-apps", "--disable-domain-reliability",
        "--disable-client-side-phishing-detection", "--no-pings", "--lang=en-US",
        "--force-color-profile=srgb", "--hide-scrollbars",
        "--host-resolver-rules=MAP * ~NOTFOUND , EXCLUDE 127.0.0.1",
        f"--user-data-dir={tmp_path_factory.mktemp('chromium-profile')}",
    ):
        options.add_argument(arg)
    options.add_experimental_option("prefs", {
        "download.default_directory": str(downloads), "download.prompt_for_download": False,
        "safebrowsing.enabled": False,
    })
    log = tmp_path_factory.mktemp("chromedriver") / "chromedriver.log"
    driver = webdriver.Chrome(service=Service(CHROMEDRIVER, log_output=str(log)),
                              options=options)
    driver.set_page_load_timeout(WAIT_S)
    try:
        yield driver
    finally:
        driver.quit()


# ----- tests -------------------------------------------------------------------------------------
def test_console_walkthrough_in_browser(server: ServerProcess, browser: WebDriver,
                                        downloads: Path, shots: Path) -> None:
    """Sign in, add, search, preview recall, edit, forget, export, delete, sign out."""
    base, d, p = server.url, browser, "alice"
    d.set_window_size(1280, 1000)
    d.get(f"{base}/console/")
    assert d.title == "Sign in · semmem console"
    assert d.current_url.startswith(f"{base}/console/signin?next=")
    shoot(d, shots, "01-signin", 700)

    sign_in(d, base, ADMIN_TOKEN)
    assert d.title == "Partitions · semmem console"
    cookie = d.get_cookie(COOKIE)
    assert cookie is not None and cookie["httpOnly"] and cookie["sameSite"] == "Strict"
    assert cookie["path"] == "/console" and not cookie["secure"]  # plain-HTTP loopback
    assert d.execute_script("return document.cookie") == ""  # invisible to scripts

    # Start a partition from the partitions page, then add three items.
    fill(d, "open", p)
    submit(d, d.find_element(By.CSS_SELECTOR, "form[action='/console/partition'] button"))
    assert "No items in this partition yet" in text(d)
    facts = [("Alice drinks green tea every morning", "since 2020"),
             ("Alice's sister lives in Porto", ""),
             ("The team meeting moved to Thursday at 10", "")]
    for i, (fact, note) in enumerate(facts, 1):
        fill(d, "add_text", fact)
        fill(d, "add_note", note)
        submit(d, d.find_element(By.ID, "add"))
        assert text(d, ".flash") == f"Item #{i} added."
    assert item_numbers(d) == [3, 2, 1]  # newest first
    assert text(d, "#item-count") == "3"

    # Search with the real ranking: the tea fact comes first, with its score.
    fill(d, "q", "green tea")
    submit(d, d.find_element(By.ID, "search"))
    hits = d.find_elements(By.CSS_SELECTOR, "#search-results li.item")
    assert hits and hits[0].find_element(By.CSS_SELECTOR, ".n").text == "#1"
    assert hits[0].find_element(By.CSS_SELECTOR, ".score").text.startswith("score 0.")
    shoot(d, shots, "02-search")

    # Recall preview: exactly the host's text, within the budget.
    budget = 60
    fill(d, "recall_text", "which tea does Alice drink in the morning?")
    fill(d, "max_bytes", str(budget))
    submit(d, d.find_element(By.ID, "recall"))
    recalled = text(d, "#recall-text")
    assert recalled.startswith("1. Alice drinks green tea every morning — since 2020")
    used = int(text(d, "#recall-bytes"))
    assert used == len(recalled.encode()) <= budget
    assert f"{used} of {budget} bytes" in text(d, "#recall-preview")
    ids = [td.text for td in d.find_elements(By.CSS_SELECTOR, ".sources tbody td:first-child")]
    assert ids == [line.split(".")[0] for line in recalled.split("\n")]
    d.set_window_size(1280, 1000)
    shoot(d, shots, "03-recall-preview")

    # Edit item 1: text, note and status.
    d.find_element(By.CSS_SELECTOR, "a[aria-label='Edit item 1']").click()
    wait(d, ec.title_contains("Item #1"), "the edit page")
    fill(d, "text", "Alice drinks jasmine tea every morning")
    fill(d, "note", "switched in 2024")
    fill(d, "status", "active")
    shoot(d, shots, "04-edit", 900)
    submit(d, d.find_element(By.ID, "save"))
    assert text(d, ".flash") == "Item #1 saved."
    item1 = text(d, "#item-1")
    assert "Alice drinks jasmine tea every morning" in item1 and "switched in 2024" in item1
    assert "rev 2" in item1

    # Forget item 2 (the page asks first).
    submit(d, d.find_element(By.CSS_SELECTOR, "button[aria-label='Forget item 2']"),
           accept_confirm=True)
    assert text(d, ".flash") == "Item #2 forgotten."
    assert item_numbers(d) == [3, 1]

    # Export: a JSONL download of what is left.
    for old in downloads.glob("*"):
        old.unlink()
    d.find_element(By.ID, "export").click()
    files = wait(d, lambda _: [f for f in downloads.glob("semmem-alice-*.jsonl")
                               if f.stat().st_size > 0], "the export download")
    time.sleep(0.2)  # Chromium renames the file when the download completes; let it settle
    records = [json.loads(line) for line in files[0].read_text().splitlines()]
    assert [(r["n"], r["text"], r.get("note"), r.get("status")) for r in records] == [
        (1, "Alice drinks jasmine tea every morning", "switched in 2024", "active"),
        (3, "The team meeting moved to Thursday at 10", None, None)]

    # Delete, with the typed confirmation: the button waits for the exact name.
    submit(d, d.find_element(By.ID, "delete"))
    button = d.find_element(By.ID, "confirm-delete")
    assert not button.is_enabled()
    fill(d, "confirm", "alic")
    assert not button.is_enabled()
    d.find_element(By.ID, "confirm").send_keys("e")
    assert button.is_enabled()
    shoot(d, shots, "05-delete", 700)
    submit(d, button)
    assert text(d, ".flash") == "Partition deleted."
    assert "0 partitions." in text(d)
    with server.client() as c:
        left = c.get("/admin/items", params={"partition": p},
                     headers={"Authorization": f"Bearer {ADMIN_TOKEN}"})
        assert left.json() == {"items": [], "count": 0, "next": None}

    # Sign out: the cookie is gone and pages ask for a sign-in again.
    submit(d, d.find_element(By.ID, "signout"))
    assert text(d, ".flash") == "Signed out."
    assert d.get_cookie(COOKIE) is None
    d.get(f"{base}/console/")
    assert d.title == "Sign in · semmem console"

    for shot in shots.glob("0*.png"):
        assert_real_picture(shot)


def test_wrong_token_refused_in_browser(server: ServerProcess, browser: WebDriver) -> None:
    browser.delete_all_cookies()
    sign_in(browser, server.url, "not-the-admin-token")
    assert browser.title == "Sign in · semmem console"
    assert text(browser, "#error") == "Wrong admin token."
    assert browser.find_element(By.ID, "token").get_attribute("aria-invalid") == "true"
    assert browser.get_cookie(COOKIE) is None
    browser.get(f"{server.url}/console/")
    assert browser.title == "Sign in · semmem console"


def test_provider_token_reaches_no_console_page(server: ServerProcess, browser: WebDriver,
                                                shots: Path) -> None:
    base, d = server.url, browser
    d.delete_all_cookies()
    sign_in(d, base, TOKEN)
    assert text(d, "#error") == "This is a provider token; the console needs an admin token."
    assert d.get_cookie(COOKIE) is None
    pages = ["/console/", "/console/partition?p=x", "/console/item?p=x&n=1",
             "/console/delete?p=x"]
    for path in pages:
        d.get(base + path)
        assert d.title == "Sign in · semmem console", path
    # Even a cookie made by hand (the old format carried a token itself) opens nothing: the
    # session lives on the server, the cookie only names it.
    raw = base64.urlsafe_b64encode(TOKEN.encode()).decode().rstrip("=")
    for forged in (f"v1.{int(time.time())}.forged.{raw}", "v2." + "A" * 43):
        for path in pages:
            d.add_cookie({"name": COOKIE, "value": forged, "path": "/console",
                          "httpOnly": True, "sameSite": "Strict"})
            d.get(base + path)
            assert d.title == "Sign in · semmem console", path
    shoot(d, shots, "06-provider-token-refused", 500)


def test_console_keyboard_and_phone(server: ServerProcess, browser: WebDriver,
                                    shots: Path) -> None:
    """Usable with the keyboard alone, and on a phone-sized screen without sideways scrolling."""
    base, d = server.url, browser
    d.delete_all_cookies()
    d.set_window_size(390, 844)
    d.get(f"{base}/console/signin")
    # The token field has focus (autofocus applies once the page is parsed: wait for it, not
    # for our luck on a busy machine); typing and Enter signs in.
    wait(d, lambda drv: drv.switch_to.active_element.get_attribute("id") == "token",
         "the focus on the token field")
    d.switch_to.active_element.send_keys(ADMIN_TOKEN)
    marker = mark_page(d)
    d.switch_to.active_element.send_keys(Keys.ENTER)
    wait_for_next_page(d, marker, "the partitions page")
    assert d.title == "Partitions · semmem console"
    # Tab order: the skip link comes first and jumps to the content.
    d.find_element(By.TAG_NAME, "body").send_keys(Keys.TAB)
    assert d.switch_to.active_element.text == "Skip to content"

    d.get(f"{base}/console/partition?p=bob")
    # Add an item with the keyboard: type in the text field, Tab to the note, Enter submits.
    d.find_element(By.ID, "add_text").send_keys("Bob takes the 7:40 train")
    d.switch_to.active_element.send_keys(Keys.TAB)
    assert d.switch_to.active_element.get_attribute("id") == "add_note"
    marker = mark_page(d)
    d.switch_to.active_element.send_keys("weekdays", Keys.ENTER)
    wait_for_next_page(d, marker, "the partition page")
    assert text(d, ".flash") == "Item #1 added."
    # "/" jumps to the search box.
    d.find_element(By.TAG_NAME, "body").send_keys("/")
    assert d.switch_to.active_element.get_attribute("id") == "q"
    # Every form control has a label.
    unlabelled = d.execute_script("""
        return [...document.querySelectorAll('input:not([type=hidden]), textarea, select')]
          .filter(el => !(el.labels && el.labels.length) && !el.getAttribute('aria-label'))
          .map(el => el.id || el.name);""")
    assert unlabelled == []
    # Nothing wider than the phone's screen.
    overflow = d.execute_script(
        "return document.documentElement.scrollWidth - document.documentElement.clientWidth")
    assert overflow <= 0
    assert_real_picture(shoot(d, shots, "07-phone"))
    d.set_window_size(1280, 1000)



def test_similar_facts_merged_and_forgotten_in_browser(server: ServerProcess, browser: WebDriver,
                                                       shots: Path) -> None:
    """The partition page links to its similar facts; merge one, forget another."""
    base, d, p = server.url, browser, "consolidate"
    d.get(f"{base}/console/signin")
    d.delete_all_cookies()  # a fresh session, whatever an earlier test left
    sign_in(d, base, ADMIN_TOKEN)
    d.get(f"{base}/console/partition?p={p}")
    for fact in ("Bo drinks green tea", "Bo owns a red kayak", "Bo drinks green tea daily",
                 "Bo owns a red kayak and a canoe", "Bo drinks green tea at noon"):
        fill(d, "add_text", fact)
        submit(d, d.find_element(By.ID, "add"))
    submit(d, d.find_element(By.ID, "similar"))
    assert d.title == f"Similar facts in {p} · semmem console"
    groups = d.find_elements(By.CSS_SELECTOR, "#groups > li")
    assert [g.get_attribute("id") for g in groups] == ["group-5", "group-4"]
    assert "#3" in text(d, "#group-5") and "#1" in text(d, "#group-5")
    shoot(d, shots, "similar")

    submit(d, d.find_element(By.CSS_SELECTOR, "[aria-label='Merge item 3 into 5']"))
    assert "Item #3 merged" in text(d)
    assert not d.find_elements(By.ID, "similar-3")  # merged: no longer recalled
    submit(d, d.find_element(By.CSS_SELECTOR, "[aria-label='Forget item 2']"),
           accept_confirm=True)
    assert "Item #2 forgotten." in text(d)
    assert not d.find_elements(By.ID, "group-4")  # its only other fact is gone
    d.get(f"{base}/console/partition?p={p}")
    assert item_numbers(d) == [5, 4, 3, 1]
    assert "merged into #5" in text(d, "#item-3")


def test_metadata_added_filtered_and_edited_in_browser(server: ServerProcess, browser: WebDriver,
                                                       shots: Path) -> None:
    """Add a fact with metadata, find it with the listing's filter, edit its metadata on the
    item page (a refused box keeps what was typed), and the filter follows."""
    base, d, p = server.url, browser, "scoped"
    d.get(f"{base}/console/signin")
    d.delete_all_cookies()  # a fresh session, whatever an earlier test left
    sign_in(d, base, ADMIN_TOKEN)
    d.get(f"{base}/console/partition?p={p}")
    for fact, meta in (("Ann takes the early train", "user=ann\nrun=3"),
                       ("Ben cycles to work", "user=ben")):
        fill(d, "add_text", fact)
        fill(d, "add_meta", meta)  # Enter in the box is a new line, not a submit
        submit(d, d.find_element(By.ID, "add"))
    assert item_numbers(d) == [2, 1]

    def badges(n: int) -> list[str]:
        return [b.text for b in d.find_elements(By.CSS_SELECTOR, f"#item-{n} .badge.meta")]

    def listed(meta: str) -> list[int]:
        fill(d, "meta", meta)
        submit(d, d.find_element(By.ID, "filter"))
        return item_numbers(d)

    assert badges(1) == ["run=3", 'user="ann"'] and badges(2) == ['user="ben"']
    assert listed("user=ann") == [1]
    d.find_element(By.CSS_SELECTOR, "a[aria-label='Edit item 1']").click()
    wait(d, ec.title_contains("Item #1"), "the edit page")
    assert d.find_element(By.ID, "metadata").get_attribute("value") == "run=3\nuser=ann"
    fill(d, "metadata", "user=ann\nno equals sign")
    submit(d, d.find_element(By.ID, "save"))
    assert text(d, "#error") == "metadata takes key=value, not 'no equals sign'"
    assert d.find_element(By.ID, "metadata").get_attribute("value") == (
        "user=ann\nno equals sign")
    fill(d, "metadata", "user=cat\nrun=4")
    shoot(d, shots, "08-edit-metadata", 1000)
    submit(d, d.find_element(By.ID, "save"))
    assert text(d, ".flash") == "Item #1 saved."
    assert badges(1) == ["run=4", 'user="cat"']
    assert listed("user=ann") == [] and "No items match this filter." in text(d)
    assert listed("user=cat\nrun=4") == [1]
    with server.client() as c:
        r = c.get("/admin/items", params={"partition": p},
                  headers={"Authorization": f"Bearer {ADMIN_TOKEN}"})
        assert [i.get("metadata") for i in r.json()["items"]] == [
            {"user": "cat", "run": 4}, {"user": "ben"}]


def test_conversation_sessions_opened_and_forgotten_in_browser(
        server: ServerProcess, browser: WebDriver, shots: Path) -> None:
    """Sessions ingested through ``POST /ingest``: listed from the partition page, one opened
    (its messages in order, each piece linked by number), one forgotten whole."""
    import httpx

    base, d, p = server.url, browser, "talks"
    for session, lines in (("trip", ["I fly to Oslo on May 20.", "Have a good flight!"]),
                           ("kitchen", ["The air fryer makes crispy chickpeas."])):
        body = {"version": 1, "operationId": f"browser-{session}", "partition": p,
                "sessionId": session,
                "messages": [{"role": "user" if i % 2 == 0 else "assistant", "content": t,
                              "at": f"2024-02-0{i + 1}T08:00:00Z"} for i, t in enumerate(lines)]}
        r = httpx.post(f"{base}/ingest", json=body, headers={"Authorization": f"Bearer {TOKEN}"})
        assert r.status_code == 200, r.text
    d.get(f"{base}/console/signin")
    d.delete_all_cookies()
    sign_in(d, base, ADMIN_TOKEN)
    d.get(f"{base}/console/partition?p={p}")
    submit(d, d.find_element(By.ID, "sessions"))
    assert d.title == f"Sessions in {p} · semmem console"
    assert "trip" in text(d, "#sessions") and "kitchen" in text(d, "#sessions")
    submit(d, d.find_element(By.LINK_TEXT, "trip"))
    messages = d.find_elements(By.CSS_SELECTOR, "#messages > li")
    assert ["Oslo" in messages[0].text, "flight" in messages[1].text] == [True, True]
    assert "assistant" in messages[1].text
    shoot(d, shots, "session")
    submit(d, d.find_element(By.ID, "forget-session"), accept_confirm=True)
    assert "Session forgotten: 2 piece(s)." in text(d)
    assert "trip" not in text(d, "#sessions") and "kitchen" in text(d, "#sessions")
