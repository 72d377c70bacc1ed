"""Two replicas on one S3 bucket while the store misbehaves: every acknowledged write stays.

moto's S3 server runs in this process on loopback, behind the fault-injecting proxy of
``tests/support/s3proxy.py``; two real ``semmem serve`` processes (fake embedder) share a
bucket through it. About 5 % of requests fail the way object stores fail: 503 SlowDown, a
connection reset before the request, a body cut mid-way, and a commit whose reply is lost after
it took effect. Writers go through both replicas; then, with the faults off, the store is read
directly.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

from semmem.embedding.fakes import HashingEmbedder
from semmem.memory import Memory
from tests.support.moto import moto_s3, options
from tests.support.s3proxy import Fault, S3Proxy
from tests.support.server import ServerProcess
from tests.support.web import send, tool

BUCKET = "semmem-faults"
FAULTS = [
    Fault("drop_after_success", method="PUT", path="_versions/", rate=0.05, seed=1),
    Fault("status", rate=0.02, seed=2),
    Fault("reset_before", rate=0.01, seed=3),
    Fault("reset_mid_body", method="GET", rate=0.01, seed=4),
]


@pytest.fixture
def store(tmp_path: Path) -> Iterator[tuple[dict[str, str], S3Proxy]]:
    """moto and the proxy before it; yields the storage options of moto itself and the proxy."""
    with moto_s3(BUCKET) as endpoint:
        proxy = S3Proxy(endpoint).start()
        try:
            yield options(endpoint), proxy
        finally:
            proxy.stop()


def _replica(tmp_path: Path, name: str, proxy: S3Proxy, direct: dict[str, str]
             ) -> ServerProcess:
    options = {**direct, "aws_endpoint": proxy.endpoint}
    env = {"SEMMEM_DATA": f"s3://{BUCKET}/store", "SEMMEM_STORAGE_OPTIONS": json.dumps(options),
           "SEMMEM_MAX_CONCURRENCY": "64"}
    return ServerProcess(tmp_path / name, env=env)


def _within_contract(r: Any) -> None:
    """A refusal is the contract's envelope: 503 with Retry-After, never a stack trace."""
    assert r.status_code == 503, r.text
    assert r.headers.get("Retry-After"), r.headers
    error = r.json()["error"]
    assert error["code"] and "Traceback" not in r.text


@pytest.mark.timeout(120)
def test_writes_through_two_replicas_survive_store_faults(
        tmp_path: Path, store: tuple[dict[str, str], S3Proxy]) -> None:
    direct, proxy = store
    a = _replica(tmp_path, "a", proxy, direct).start()
    b = _replica(tmp_path, "b", proxy, direct).start()
    try:
        a.wait_ready(90)
        b.wait_ready(90)
        proxy.faults(*FAULTS)
        acknowledged: dict[str, dict[str, Any]] = {}  # operation id → (body, result)
        with a.client() as ca, b.client() as cb:
            clients = [ca, cb]

            def write(job: tuple[int, int]) -> None:
                worker, i = job
                body = tool("remember", {"text": f"worker {worker} fact {i} topic {i % 5}"},
                            partition=f"part-{(worker + i) % 3}",
                            operation_id=f"w{worker}-{i}")
                for attempt in range(3):  # a client retries a refusal under the same id
                    r = send(clients[(worker + i + attempt) % 2], body)
                    if r.status_code == 200:
                        acknowledged[body["operationId"]] = {"body": body,
                                                             "result": r.json()["result"]}
                        return
                    _within_contract(r)

            jobs = [(w, i) for i in range(12) for w in range(4)]
            with ThreadPoolExecutor(max_workers=4) as pool:
                list(pool.map(write, jobs))
            applied = sum(f.applied for f in FAULTS)
            proxy.faults()
            assert len(acknowledged) >= len(jobs) // 2
            # The replay of an operation id returns the original result, on either replica.
            for i, (op, seen) in enumerate(sorted(acknowledged.items())):
                r = send(clients[i % 2], seen["body"])
                assert r.status_code == 200, r.text
                assert r.json()["result"] == seen["result"], op
    finally:
        a.stop()
        b.stop()
    assert applied > 0

    import asyncio

    from semmem.store.upkeep.check import check_partition

    async def stored() -> tuple[dict[str, dict[int, str]], list[str]]:
        memory = await Memory.open(f"s3://{BUCKET}/store", HashingEmbedder(),
                                   storage_options=direct)
        try:
            parts = ("part-0", "part-1", "part-2")
            problems = [f"{p}: {x}" for p in parts
                        for x in (await check_partition(memory.store, p)).problems]
            return {p: {it.n: it.text for it in await memory.list(p)} for p in parts}, problems
        finally:
            await memory.close()

    items, problems = asyncio.run(stored())
    assert problems == []  # `semmem check` on every partition
    numbers: dict[str, set[int]] = {}
    for seen in acknowledged.values():
        partition, text = seen["body"]["partition"], seen["body"]["arguments"]["text"]
        n = seen["result"]["n"]
        assert items[partition].get(n) == text  # durable and unchanged
        assert n not in numbers.setdefault(partition, set())  # one number per fact
        numbers[partition].add(n)
