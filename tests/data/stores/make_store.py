"""Write a store with an older release's own code, for the upgrade tests
(``tests/store/test_upgrade.py`` opens every folder beside this script).

    .venv-client/bin/python tests/data/stores/make_store.py OLD_CHECKOUT OUT \\
        --server-python .venv/bin/python

``OLD_CHECKOUT``: a checkout of the release (``git worktree add /tmp/old <commit>``); ``OUT``:
the fixture's folder (``tests/data/stores/<commit>``), replaced. The release's ``semmem serve``
runs from the checkout (``PYTHONPATH`` = the checkout, the fake embedder, as the tests' servers
do) under ``--server-python``; this script drives it with that release's Python client and its
LangGraph ``SemmemStore`` (``PYTHONPATH`` gets the checkout's ``clients/python/src``), so it
needs ``httpx`` and ``langgraph`` (the client's venv). It writes ``OUT/store`` (the data
directory), ``OUT/backups`` (one backup of it) and ``OUT/expected.json`` (what the upgrade test
checks: numbers, texts, the forgotten one, the expiries, the override, the store items).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(REPO))  # the tests' harness: standard library and httpx only
from tests.support.server import FAKE_LAUNCH, free_port, iso_in  # noqa: E402

TOKEN = "fixture-token-provider"
ADMIN_TOKEN = "fixture-token-admin"
USER = "users/alice"  # the partition of LangGraph's namespace ("users", "alice")
OTHER = "bob"
TALKS = "carol"  # the partition of the ingested conversations
TTL_NAMESPACE = ("teams", "kiln")  # a second namespace, its item put with a TTL
TTL_MINUTES = 50 * 365 * 24 * 60  # far enough ahead for the fixture to outlive CI


def _serve(old: Path, out: Path, python: str, log: Path) -> tuple[subprocess.Popen[bytes], str]:
    """The release's server on ``out/store``, backing up to ``out/backups`` (paths relative to
    ``out``, its working directory: a backup's manifest names its source)."""
    port = free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith("SEMMEM_")}
    env.update({"PYTHONPATH": str(old), "SEMMEM_DATA": "store", "SEMMEM_HOST": "127.0.0.1",
                "SEMMEM_PORT": str(port), "SEMMEM_TOKENS": TOKEN,
                "SEMMEM_ADMIN_TOKENS": ADMIN_TOKEN, "SEMMEM_LOG_LEVEL": "warning",
                "SEMMEM_TOOL_METADATA": "true", "SEMMEM_TOOL_EXPIRY": "true",
                "SEMMEM_BACKUP_TO": "backups", "PYTHONUNBUFFERED": "1"})
    with log.open("ab") as sink:
        proc = subprocess.Popen([python, "-c", FAKE_LAUNCH], env=env, cwd=out, stdout=sink,
                                stderr=subprocess.STDOUT)
    return proc, f"http://127.0.0.1:{port}"


def _ready(http: Any, proc: subprocess.Popen[bytes], log: Path) -> None:
    began = time.monotonic()
    while time.monotonic() - began < 120:
        if proc.poll() is not None:
            raise RuntimeError(f"the old server exited: {log.read_text()[-2000:]}")
        try:
            if http.get("/readyz").status_code == 200:
                return
        except Exception:  # not listening yet
            pass
        time.sleep(0.1)
    raise TimeoutError(f"the old server is not ready: {log.read_text()[-2000:]}")


def write(old: Path, out: Path, python: str) -> dict[str, Any]:
    """Write the store under ``out`` with the release at ``old``; what was written."""
    sys.path.insert(0, str(old / "clients" / "python" / "src"))
    import httpx
    from semmem_client import Client  # the old release's client

    # What the release has: metadata on facts (e7c9746), the LangGraph adapter (its client).
    metadata = (old / "semmem" / "metadata.py").exists() \
        or (old / "semmem" / "scoped" / "metadata.py").exists() \
        or (old / "semmem" / "items" / "metadata.py").exists()
    langgraph = (old / "clients" / "python" / "src" / "semmem_client" / "langgraph.py").exists()
    # Store items as keyed items (POST /store) and the listing partition %store-namespaces
    # (wave 6, up to 62c1cbc); conversations through POST /ingest.
    keyed = (old / "semmem" / "stored").is_dir()
    ingest = (old / "semmem" / "conversations").is_dir()
    # Listing records (store format 3, up to 902e632): store items in the model's tables.
    listed = (old / "semmem" / "store" / "system.py").exists()
    shutil.rmtree(out, ignore_errors=True)
    out.mkdir(parents=True)
    log = out.parent / f"{out.name}.log"
    proc, url = _serve(old, out, python, log)
    admin = {"Authorization": f"Bearer {ADMIN_TOKEN}"}
    written: dict[str, Any] = {}
    try:
        with httpx.Client(base_url=url, timeout=60) as http:
            _ready(http, proc, log)

            def edit(n: int, changes: dict[str, Any]) -> None:
                http.patch("/admin/items", params={"partition": USER, "n": n}, json=changes,
                           headers=admin).raise_for_status()

            client = Client(url, TOKEN)
            tagged = {"metadata": {"topic": "units"}} if metadata else {}
            units = client.remember(USER, "Alice prefers metric units", **tagged)["n"]
            sister = client.remember(USER, "Alice's sister lives in Lyon")["n"]
            client.update(USER, sister, "Alice's sister moved to Paris")
            locker = client.remember(USER, "Alice's locker code is quokka-4417")["n"]
            client.forget(USER, locker)
            marathon = client.remember(USER, "Alice is training for the spring marathon")["n"]
            far = "2099-01-01T00:00:00.000Z"
            edit(marathon, {"expiresAt": far})
            permit = client.remember(USER, "Alice's parking permit runs out today")["n"]
            soon = time.time() + 2
            edit(permit, {"expiresAt": iso_in(2)})
            bees = client.remember(OTHER, "Bob keeps two hives of bees")["n"]
            http.put("/admin/retention", params={"partition": OTHER, "policy": "3650d"},
                     headers=admin).raise_for_status()
            if listed:  # a fact of the model's that merely parses as an old item's JSON
                text = '{"key":"k","value":{"a":1}}'
                written["json_fact"] = {"n": client.remember(USER, text)["n"], "text": text}
            if langgraph and keyed:
                written.update(_keyed_items(Client(url, TOKEN, admin_token=ADMIN_TOKEN), http))
            elif langgraph:
                written["store"] = _store_items(Client(url, TOKEN, admin_token=ADMIN_TOKEN))
            if ingest:
                written["conversation"] = _conversations(
                    Client(url, TOKEN, admin_token=ADMIN_TOKEN), http)
            highest = http.get("/admin/stats", params={"partition": USER},
                               headers=admin).json()["highest"]

            while time.time() < soon:  # the permit expired before the backup
                time.sleep(0.1)
            http.post("/admin/backups", headers=admin).raise_for_status()
            for _ in range(600):
                listed = http.get("/admin/backups", headers=admin).json()
                if listed["backups"]:
                    break
                time.sleep(0.1)
            else:
                raise TimeoutError(f"the backup did not complete: {listed}")
            backup = listed["backups"][0]["id"]
    finally:
        proc.terminate()
        proc.wait(30)
    log.unlink(missing_ok=True)
    shutil.rmtree(out / "store" / "_tmp", ignore_errors=True)  # the engine's scratch folder
    expected: dict[str, Any] = {
        "partition": USER, "other": OTHER,
        "facts": {str(units): "Alice prefers metric units",
                  str(sister): "Alice's sister moved to Paris",
                  str(marathon): "Alice is training for the spring marathon"},
        "metadata": {str(units): {"topic": "units"}} if metadata else {},
        "updated": sister, "forgotten": {"n": locker, "text": "quokka-4417"},
        "expires": {"n": marathon, "at": far}, "expired": permit,
        "other_facts": {str(bees): "Bob keeps two hives of bees"},
        "retention": {"partition": OTHER, "maxAgeMs": 3650 * 86_400_000},
        "backup": backup,
        "hwm": highest,
        **written,
    }
    (out / "expected.json").write_text(json.dumps(expected, indent=1, sort_keys=True) + "\n")
    return expected


def _store_items(client: Any) -> dict[str, Any]:
    """Two LangGraph items put through the release's ``SemmemStore`` (one put twice, one not
    indexed); what the upgrade test checks of them."""
    from semmem_client.langgraph import SemmemStore

    store = SemmemStore(client)
    namespace = ("users", "alice")
    store.put(namespace, "profile", {"name": "Alice", "diet": "omnivore"})
    profile = {"name": "Alice", "diet": "vegetarian", "city": "Paris"}
    store.put(namespace, "profile", profile)  # the release's put of a held key: an edit
    notes = {"text": "call back on Tuesday about the kiln"}
    store.put(namespace, "notes", notes, index=False)
    got = store.get(namespace, "profile")
    assert got is not None and got.value == profile, got
    facts = {e["n"]: e["text"] for e in client.export(USER) if '"key":' in e["text"]}
    assert len(facts) == 2, facts
    return {"namespace": list(namespace),
            "items": {"profile": {"value": profile, "indexed": True},
                      "notes": {"value": notes, "indexed": False}},
            "numbers": sorted(facts)}


def _keyed_items(client: Any, http: Any) -> dict[str, Any]:
    """LangGraph items put through the release's ``SemmemStore`` as its store items (keyed
    items, listed in its partition ``%store-namespaces``): two in one namespace (one put twice,
    one not indexed), one with a TTL in another; what the upgrade test checks of them."""
    from semmem_client.langgraph import SemmemStore

    store = SemmemStore(client)
    namespace = ("users", "alice")
    store.put(namespace, "profile", {"name": "Alice", "diet": "omnivore"})
    profile = {"name": "Alice", "diet": "vegetarian", "city": "Paris"}
    store.put(namespace, "profile", profile)
    notes = {"text": "call back on Tuesday about the kiln"}
    store.put(namespace, "notes", notes, index=False)
    schedule = {"text": "glaze firing every second Thursday"}
    store.put(TTL_NAMESPACE, "schedule", schedule, ttl=TTL_MINUTES)
    got = http.post("/store", json={"ops": [
        {"op": "get", "namespace": list(TTL_NAMESPACE), "key": "schedule",
         "refreshTtl": False}]}, headers={"Authorization": f"Bearer {TOKEN}"})
    got.raise_for_status()
    held = got.json()["results"][0]
    assert held is not None and held["value"] == schedule and held["expiresAt"], held
    assert [tuple(ns) for ns in store.list_namespaces()] == [TTL_NAMESPACE, namespace]
    return {"store": {"namespace": list(namespace),
                      "items": {"profile": {"value": profile, "indexed": True},
                                "notes": {"value": notes, "indexed": False}}},
            "store_ttl": {"namespace": list(TTL_NAMESPACE), "key": "schedule",
                          "value": schedule, "expiresAt": held["expiresAt"]},
            "namespaces": [list(TTL_NAMESPACE), list(namespace)],
            "upgrade_numbers": 0}  # the release's items are items already


def _conversations(client: Any, http: Any) -> dict[str, Any]:
    """Three sessions ingested through ``POST /ingest`` into ``TALKS``: one piece of the first
    forgotten, the third deleted whole (``DELETE /admin/session``); what the test checks."""
    sessions = {
        "trip-kyoto": [
            {"role": "user", "content": "I am planning a trip to Kyoto in April.",
             "at": "2026-11-01T10:00:00Z"},
            {"role": "assistant", "content": "Cherry blossoms usually peak in early April.",
             "at": "2026-11-01T10:00:05Z"},
            {"role": "user", "content": "My passport number is XK-5518-PASS.",
             "at": "2026-11-01T10:01:00Z"}],
        "pottery-class": [
            {"role": "user", "content": "I signed up for a wheel-throwing class on Mondays.",
             "at": "2026-11-02T18:00:00Z"},
            {"role": "assistant", "content": "Wedge the clay well before you centre it.",
             "at": "2026-11-02T18:00:04Z"}],
        "old-bank": [
            {"role": "user", "content": "My old bank PIN was 8812-ZEBRA.",
             "at": "2026-11-03T09:00:00Z"}],
    }
    numbers = {sid: client.ingest(TALKS, sid, messages, operation_id=f"fixture:{sid}")["items"]
               for sid, messages in sessions.items()}
    passport = numbers["trip-kyoto"][2]
    assert len(passport) == 1, numbers
    client.forget(TALKS, passport[0])
    client.forget_session(TALKS, "old-bank")
    listed = [s["sessionId"] for s in client.sessions(TALKS)]
    assert sorted(listed) == ["pottery-class", "trip-kyoto"], listed
    highest = http.get("/admin/stats", params={"partition": TALKS},
                       headers={"Authorization": f"Bearer {ADMIN_TOKEN}"}).json()["highest"]
    return {"partition": TALKS, "sessions": sessions, "numbers": numbers,
            "listed": ["pottery-class", "trip-kyoto"], "hwm": highest,
            "forgotten": {"session": "trip-kyoto", "message": 2, "n": passport[0],
                          "text": "XK-5518-PASS"},
            "deleted": {"session": "old-bank", "numbers": numbers["old-bank"][0],
                        "text": "8812-ZEBRA"}}


def main() -> None:
    """The command line (see the module's docstring)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("old", type=Path, help="a checkout of the release")
    parser.add_argument("out", type=Path, help="the fixture's folder (replaced)")
    parser.add_argument("--server-python", default=sys.executable,
                        help="the interpreter that runs the release's server")
    args = parser.parse_args()
    print(json.dumps(write(args.old.resolve(), args.out.resolve(), args.server_python),
                     indent=1))


if __name__ == "__main__":
    main()
