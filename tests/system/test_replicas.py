"""Two real ``semmem serve`` replicas on one local store with the shipped defaults (version
retention, maintenance delay, fence): one holds a partition idle on an old version while the
other writes and its purge pass cleans the old versions up; then the idle one writes."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from semmem.embedding.fakes import HashingEmbedder
from semmem.store import Store, table_name
from semmem.store.commit.fence import listed_versions
from semmem.store.upkeep.check import check_partition
from tests.support.files import decoded_with
from tests.support.server import ServerProcess
from tests.support.web import remember, send, tool

FAKETIME_SHIM = Path(__file__).parents[1] / "support" / "faketime"
SECRET = "the secret is MARKER-replicas-4b2e"


# B's clock: as A's, or ahead or behind by nearly the bound the shipped defaults tolerate
# (``SEMMEM_MAX_CLOCK_SKEW_S`` = 1 s; libfaketime shifts the wall clock, not the monotonic one;
# tests/support/faketime makes ``time.sleep`` work under it).
SKEWS = ["", "+0.9s", "-0.9s"]


def _skewed(offset: str) -> dict[str, str]:
    """The environment that runs a process with its wall clock shifted by ``offset``."""
    libs = sorted(Path("/usr/lib").glob("*/faketime/libfaketime.so.1"))
    if not libs:
        pytest.skip("libfaketime is not installed (scripts/ensure-browser.sh installs it)")
    # Preloaded into the server itself (the ``faketime`` wrapper forks: stopping it would
    # leave the server running).
    return {"LD_PRELOAD": str(libs[0]), "FAKETIME": offset, "FAKETIME_DONT_FAKE_MONOTONIC": "1",
            "PYTHONPATH": os.pathsep.join(
                [str(FAKETIME_SHIM), *filter(None, [os.environ.get("PYTHONPATH")])])}


@pytest.mark.parametrize("offset", SKEWS[1:])
def test_a_skewed_process_has_its_clock_shifted_and_can_sleep(offset: str) -> None:
    """The harness itself: the shifted clock is shifted, and ``time.sleep`` works under it
    (before the shim every call raised ``OSError: [Errno 22]``, which the replica test met as
    a traceback from a commit retry)."""
    probe = ("import time; t = time.monotonic(); time.sleep(0.05); "
             "print(time.time(), time.monotonic() - t)")
    out = subprocess.run([sys.executable, "-c", probe], env={**os.environ, **_skewed(offset)},
                         capture_output=True, text=True, timeout=30)
    assert out.returncode == 0, out.stderr
    shifted, slept = (float(x) for x in out.stdout.split())
    assert abs((shifted - time.time()) - float(offset[:-1])) < 0.3
    assert slept >= 0.05


@pytest.fixture(params=SKEWS, ids=["same-clock", "b-ahead", "b-behind"])
def pair(tmp_path: Path, request: pytest.FixtureRequest
         ) -> Iterator[tuple[ServerProcess, ServerProcess]]:
    data = tmp_path / "data"
    skewed = _skewed(request.param) if request.param else {}
    a = ServerProcess(data, maintenance_delay_s=None, log=tmp_path / "a.log").start()
    b = ServerProcess(data, maintenance_delay_s=None, log=tmp_path / "b.log",
                      env=skewed).start()
    try:
        a.wait_ready()
        b.wait_ready()
        yield a, b
    finally:
        a.stop()
        b.stop()


def _gone(uri: str, version: int, timeout: float = 90.0) -> None:
    """Wait until cleanup removed ``version`` (the condition the defect needed)."""
    until = time.monotonic() + timeout
    while version in listed_versions(uri, {}):
        if time.monotonic() > until:
            pytest.fail(f"version {version} was never cleaned up")
        time.sleep(0.2)


@pytest.mark.timeout(240)
def test_an_idle_replica_writes_after_the_others_purge_without_reusing_numbers_or_texts(
        pair: tuple[ServerProcess, ServerProcess]) -> None:
    a, b = pair
    uri = str(a.data / f"{table_name('p')}.lance")
    with a.client() as ca, b.client() as cb:
        assert remember(ca, "p", "fact one from A")["n"] == 1
        assert remember(ca, "p", SECRET)["n"] == 2
        held = max(listed_versions(uri, {}))  # what A decided on last
        assert decoded_with(a.data, SECRET)
        assert remember(cb, "p", "fact three from B")["n"] == 3
        assert remember(cb, "p", "fact four from B")["n"] == 4
        r = send(cb, tool("update", {"n": 3, "text": "fact three from B, updated"}))
        assert r.status_code == 200, r.text
        r = send(cb, tool("forget", {"n": 2}))
        assert r.status_code == 200, r.text
        _gone(uri, held + 1)  # B's purge pass removed the versions above A's
        deadline = time.monotonic() + 90
        while decoded_with(a.data, SECRET):  # and the forgotten text with them
            assert time.monotonic() < deadline, "the forgotten text was never purged"
            time.sleep(0.2)
        assert remember(ca, "p", "fact five from A")["n"] == 5
    assert decoded_with(a.data, SECRET) == []

    async def inspect() -> tuple[list[tuple[int, str]], list[str]]:
        emb = HashingEmbedder()
        store = Store(str(a.data), dim=emb.dim, model_id=emb.model_id)
        await store.open()
        snap = await store.snapshot("p")
        found = await check_partition(store, "p")
        await store.close()
        return [(it.n, it.text) for it in snap.items], found.problems

    items, problems = asyncio.run(inspect())
    assert items == [(1, "fact one from A"), (3, "fact three from B, updated"),
                     (4, "fact four from B"), (5, "fact five from A")]
    assert problems == []
    for server in (a, b):
        assert "Traceback" not in server.output() and "ERROR" not in server.output()
