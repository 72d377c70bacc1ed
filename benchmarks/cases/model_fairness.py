"""One tenant's long recalls against another tenant's short one, on the multilingual model.

Tenant A sends six recalls whose ``input.text`` is 60 KB at once; tenant B then sends a short
recall of a partition holding a fact. Printed: B's recall alone, and B's recall right after
A's six, medians over the rounds, in two settings: A's partition empty (its recalls answered
at once, their embeddings once left running behind) and A's partition holding a fact (each
of A's recalls needs its vector).

    .venv/bin/python -m benchmarks model_fairness                   # this tree's code
    .venv/bin/python -m benchmarks model_fairness --repo /tmp/old   # another tree's (before)

``--repo`` is a source tree of semmem the server runs from (``git archive <commit>``); the
model folder is this tree's ``models/multilingual-e5-small`` unless ``--model`` says.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import httpx

from tests.support.server import AUTH, JSON, ONE_THREAD, TOKEN, free_port, iso_in

REPO = Path(__file__).resolve().parents[2]
_asked = iter(range(10**9))
LONG = " ".join(f"Am Tag {i} wanderten wir vom Tal zur Hütte und sprachen über alte Freunde."
                for i in range(900)).encode()[:60_000].decode(errors="ignore")  # 60 KB


def _body(partition: str, text: str) -> bytes:
    return json.dumps({"version": 1, "operation": "recall", "operationId": "-",
                       "partition": partition, "access": "read-write",
                       "deadlineAt": iso_in(600), "input": {"text": text},
                       "maxBytes": 1024}, ensure_ascii=False).encode()


def _remember(client: httpx.Client, partition: str, text: str) -> None:
    body = json.dumps({"version": 1, "operation": "tool", "operationId": f"r-{partition}",
                       "partition": partition, "access": "read-write",
                       "deadlineAt": iso_in(600), "tool": "remember",
                       "arguments": {"text": text}}, ensure_ascii=False).encode()
    r = client.post("/memory", content=body, headers={**AUTH, **JSON})
    assert r.status_code == 200, r.text


def _recall(client: httpx.Client, partition: str, text: str) -> float:
    """Seconds one recall took."""
    started = time.perf_counter()
    r = client.post("/memory", content=_body(partition, text), headers={**AUTH, **JSON})
    assert r.status_code == 200, r.text
    return time.perf_counter() - started


def _question() -> str:
    """B's question, never the same twice (the query cache would answer it)."""
    return f"Wo wohnt Bea, Frage {next(_asked)}?"


def _quiet(client: httpx.Client, alone: float) -> None:
    """Wait until the model is idle again: B's recall back near its time alone."""
    while _recall(client, "b", _question()) > max(3 * alone, 0.1):
        time.sleep(1.0)


def _round(url: str, a: str, stored_a: bool) -> float:
    """B's recall time right after A's six long recalls were sent."""
    with httpx.Client(base_url=url, timeout=600) as client:
        # never the same text twice (the query cache would answer it)
        threads = [threading.Thread(target=_recall, args=(client, a, f"{next(_asked)} {LONG}"))
                   for _ in range(6)]
        for t in threads:
            t.start()
        if stored_a:
            time.sleep(0.3)  # A's six in the server (they wait for their vectors)
        else:
            for t in threads:
                t.join()  # answered at once: an empty partition needs no vector
        took = _recall(client, "b", _question())
        for t in threads:
            t.join()
        return took


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repo", type=Path, default=REPO, help="the tree the server runs")
    parser.add_argument("--model", type=Path, default=REPO / "models" / "multilingual-e5-small")
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    with tempfile.TemporaryDirectory() as tmp:
        env = {k: v for k, v in os.environ.items()
               if not k.startswith("SEMMEM_") and k != "PYTHONPATH"}
        env.update(ONE_THREAD)
        env.update({"SEMMEM_DATA": f"{tmp}/db", "SEMMEM_PORT": str(port),
                    "SEMMEM_HOST": "127.0.0.1", "SEMMEM_TOKENS": TOKEN,
                    "SEMMEM_MODEL": str(args.model.resolve()), "SEMMEM_MAX_CONCURRENCY": "64",
                    "SEMMEM_LOG_LEVEL": "warning", "PYTHONPATH": str(args.repo)})
        with open(f"{tmp}/server.log", "wb") as log:
            server = subprocess.Popen([sys.executable, "-m", "semmem.cli", "serve"], env=env,
                                      cwd=args.repo, stdout=log, stderr=subprocess.STDOUT)
        try:
            with httpx.Client(base_url=url, timeout=600) as client:
                deadline = time.monotonic() + 300
                while True:
                    try:
                        if client.get("/readyz").status_code == 200:
                            break
                    except httpx.TransportError:
                        pass
                    if time.monotonic() > deadline or server.poll() is not None:
                        raise SystemExit(Path(f"{tmp}/server.log").read_text()[-2000:])
                    time.sleep(0.1)
                _remember(client, "b", "Bea wohnt seit drei Jahren in Lissabon.")
                _remember(client, "a-stored", "Die Hütte liegt oberhalb des Tals.")
                for _ in range(3):
                    _recall(client, "b", _question())  # warm
                alone = statistics.median(_recall(client, "b", _question())
                                          for _ in range(9))
                print(f"tree {args.repo}: B's recall alone, median {alone * 1000:.1f} ms")
                for stored_a in (False, True):
                    times = []
                    for r in range(args.rounds):
                        a = "a-stored" if stored_a else f"a-empty-{r}"
                        times.append(_round(url, a, stored_a))
                        _quiet(client, alone)
                    kind = "holding a fact" if stored_a else "empty"
                    print(f"  A's partition {kind}: B's recall after A's six 60 KB recalls, "
                          f"median {statistics.median(times) * 1000:.0f} ms "
                          f"(rounds: {', '.join(f'{t * 1000:.0f}' for t in times)} ms)")
        finally:
            server.terminate()
            server.wait(30)


if __name__ == "__main__":
    main()
