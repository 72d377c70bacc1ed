"""What refusing oversized tool arguments costs: the schema check in process, and another
tenant's recall over HTTP while hostile 48 KB bodies of 3,000 metadata keys arrive.

    .venv/bin/python -m benchmarks arguments --senders 8 --rounds 40

In process: ``ToolSpec.validate`` (metadata and expiry on) on bodies up to 64 KiB shaped to
cost most (thousands of keys where 16 are allowed, unknown arguments, long texts), best of five,
with the size of the 422 envelope it answers. Over HTTP: a real ``semmem serve`` (fake
embedder, ``SEMMEM_TOOL_METADATA=1``) holding 200 facts; one client's recall latency alone,
then in ``--rounds`` rounds each right behind ``--senders`` hostile bodies sent at once (each
answered 422), taking turns with rounds behind as many small bodies refused the same way.
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from semmem.errors import InvalidArguments
from semmem.protocol.tools import tools_for
from tests.support.server import AUTH, JSON, ServerProcess
from tests.support.web import recall, tool

HOSTILE = {"text": "a fact", "metadata": {f"k{i:04d}": [i] for i in range(3_000)}}
CASES: dict[str, tuple[str, dict[str, Any]]] = {
    "remember, 3,000 metadata keys": ("remember", HOSTILE),
    "search, 3,000 filter metadata keys": ("search", {"query": "x", "filter": {
        "metadata": HOSTILE["metadata"]}}),
    "search, 5,000 unknown arguments": ("search", {"query": "x", **{
        f"u{i:05d}": 1 for i in range(5_000)}}),
    "search, 5,000 unknown filter fields": ("search", {"query": "x", "filter": {
        f"f{i:05d}": 1 for i in range(5_000)}}),
    "remember, 60 KB text": ("remember", {"text": "a" * 60_000}),
    "update, 16 keys all wrong": ("update", {"n": 1, "text": "t", "metadata": {
        f"-{i}": [i] for i in range(16)}}),
}


def in_process() -> None:
    """Best-of-five time of each case's check, and its 422's size."""
    specs = {s.name: s for s in tools_for(accepted=False, metadata=True, expiry=True)}
    for spec in specs.values():
        spec.validate({"query": "warm"} if spec.name == "search" else {"n": 1, "text": "warm"}
                      if spec.name == "update" else {"n": 1} if spec.name == "forget"
                      else {"text": "warm"})
    print(f"{'case':38s} {'body':>8s} {'422':>7s} {'check':>9s}")
    for name, (tool_name, args) in CASES.items():
        best, size = float("inf"), 0
        for _ in range(5):
            start = time.perf_counter()
            try:
                specs[tool_name].validate(args)
            except InvalidArguments as exc:
                size = len(json.dumps({"error": {"code": exc.code, "message": exc.message,
                                                 "details": exc.details}}))
            best = min(best, time.perf_counter() - start)
        print(f"{name:38s} {len(json.dumps(args)):8,d} {size:7,d} {best * 1000:7.2f} ms")


def _recalls(server: ServerProcess, count: int) -> list[float]:
    out = []
    with server.client() as c:
        for i in range(count):
            body = json.dumps(recall(f"fact {i % 50} about topic {i % 7}", partition="victim"))
            start = time.perf_counter()
            r = c.post("/memory", content=body, headers={**AUTH, **JSON})
            out.append((time.perf_counter() - start) * 1000)
            assert r.status_code == 200, r.text
    return out


def over_http(senders: int, rounds: int) -> None:
    """The victim's recall alone, then in rounds: ``senders`` hostile bodies sent at once
    (each on its own connection), the victim's recall right behind them."""
    with tempfile.TemporaryDirectory() as folder:
        server = ServerProcess(Path(folder) / "db", env={"SEMMEM_TOOL_METADATA": "1"}).start()
        try:
            server.wait_ready()
            with server.client() as c:
                for i in range(200):
                    c.post("/memory", json=tool("remember", {
                        "text": f"fact {i % 50} about topic {i % 7} number {i}"},
                        partition="victim"), headers=AUTH)
            _recalls(server, 10)  # warm
            alone = _recalls(server, rounds)
            hostile = json.dumps(tool("remember", HOSTILE, partition="attacker"))
            small = json.dumps(tool("remember", {"text": "a fact", "zz": 1},
                                    partition="attacker"))
            clients = [server.client() for _ in range(senders)]
            sizes: list[int] = []
            behind: dict[str, list[float]] = {"hostile": [], "small": []}
            for r in range(2 * rounds):  # the two kinds take turns, so load falls on both
                kind = "hostile" if r % 2 else "small"
                body = hostile if kind == "hostile" else small
                go = threading.Barrier(senders + 1)

                def send(c: Any, body: str = body, go: threading.Barrier = go) -> None:
                    go.wait()
                    sizes.append(len(c.post("/memory", content=body,
                                            headers={**AUTH, **JSON}).content))

                threads = [threading.Thread(target=send, args=(c,)) for c in clients]
                for t in threads:
                    t.start()
                go.wait()
                time.sleep(0.005)  # the refused bodies first, as in the report
                behind[kind] += _recalls(server, 1)
                for t in threads:
                    t.join()
            for c in clients:
                c.close()
        finally:
            server.stop()
    print(f"hostile body {len(hostile):,} B; the largest answer {max(sizes):,} B")
    rows = (("alone", alone), (f"behind {senders} small 422s", behind["small"]),
            (f"behind {senders} hostile", behind["hostile"]))
    for label, ms in rows:
        q = statistics.quantiles(ms, n=20)
        print(f"victim recall {label:22s} p50 {statistics.median(ms):7.1f} ms  "
              f"p95 {q[18]:7.1f} ms")


def main() -> None:
    """Run both parts."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--senders", type=int, default=8)
    parser.add_argument("--rounds", type=int, default=40)
    args = parser.parse_args()
    in_process()
    over_http(args.senders, args.rounds)


if __name__ == "__main__":
    main()
