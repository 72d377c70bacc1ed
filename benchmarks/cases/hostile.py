"""Hostile tenants: each heavy request shape the contract allows, sent by other tenants, against
a victim's short recall and ``/healthz``.

A real server (``semmem serve`` in its own process: ``tests.support.server.ServerProcess``).
The victim's recall (a partition of three facts, a short question never asked twice) and
``/healthz`` are measured alone, then while each shape runs beside them, one shape at a time,
sent again and again by ``--clients`` other tenants until the victim has ``--rounds`` samples
of each and at least one heavy request has been answered (at most ``--max-seconds``). Shapes:

  store_query      a /store search whose query is as long as the body allows (8 MiB)
  store_puts       a batch /store of puts at the body limit (32 items of 256 K index chars)
  store_searches   a batch /store of 10,000 searches (the ops limit), each its own query
  store_filtered   a batch /store of 8 filtered searches over ``--store-items`` items
  export           GET /admin/export of a partition of ``--export-items`` items
  ingest           a 4 MiB /ingest
  recall_64k       a recall whose text fills the provider path's 64 KiB body

``--scale`` shrinks the bodies and the batch of searches (1: the limits). Printed: the victim's
p50/p99 alone and beside each shape, and p99 beside / p99 alone (the goal: at most 2x).

    python -m benchmarks hostile --scale 0.25 --rounds 40
    python -m benchmarks hostile --model models/multilingual-e5-small
    python -m benchmarks hostile --repo ../before-tree   # a checkout's server (a before)
"""

from __future__ import annotations

import argparse
import itertools
import json
import tempfile
import threading
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

import httpx

from benchmarks.harness import pct
from tests.support.server import (
    ADMIN,
    AUTH,
    FAKE_LAUNCH,
    JSON,
    ONE_THREAD,
    REPO,
    ServerProcess,
    iso_in,
)

SHAPES = ("store_query", "store_puts", "store_searches", "store_filtered", "export", "ingest",
          "recall_64k")
STORE_BODY = 8 * 1024 * 1024
INGEST_BODY = 4 * 1024 * 1024
PROVIDER_BODY = 64 * 1024
WORDS = ("harbour", "lantern", "orchard", "granite", "meadow", "copper", "willow", "ember",
         "saffron", "glacier", "thimble", "quarry")
_ids = itertools.count(1)
MARK = b"@@@@@@@@@@@@"  # where a body's unique number goes


def prose(chars: int, seed: int = 0) -> str:
    """``chars`` characters of word-like text (a tokenizer's real work), never the same twice."""
    words, size, i = [], 0, seed
    while size < chars:
        word = f"{WORDS[i % len(WORDS)]}{i % 97}"
        words.append(word)
        size += len(word) + 1
        i += 7
    return " ".join(words)[:chars]


def recall_body(partition: str, text: str) -> bytes:
    return json.dumps({"version": 1, "operation": "recall",
                       "operationId": f"r{next(_ids)}{text[:12]}",
                       "partition": partition, "access": "read-write",
                       "deadlineAt": iso_in(600), "input": {"text": text},
                       "maxBytes": 1024}).encode()


def remember(c: httpx.Client, partition: str, text: str) -> None:
    body = json.dumps({"version": 1, "operation": "tool", "operationId": f"m{next(_ids)}",
                       "partition": partition, "access": "read-write",
                       "deadlineAt": iso_in(600), "tool": "remember",
                       "arguments": {"text": text}}).encode()
    r = c.post("/memory", content=body, headers={**AUTH, **JSON})
    assert r.status_code == 200, r.text


def store(c: httpx.Client, ops: list[dict[str, Any]]) -> Any:
    r = c.post("/store", content=json.dumps({"ops": ops}).encode(), headers={**AUTH, **JSON})
    assert r.status_code == 200, r.text[:500]
    return r.json()


def fill_store(c: httpx.Client, namespace: str, items: int, *, indexed: bool) -> None:
    """``items`` store items in ``[namespace]``, 500 a batch."""
    for start in range(0, items, 500):
        store(c, [{"op": "put", "namespace": [namespace], "key": f"k{i}",
                   "value": {"kind": "doc", "n": i, "meta": {"lang": "en", "tags": ["a", "b"]}},
                   "index": [f"document {i} about {WORDS[i % len(WORDS)]}"] if indexed else []}
                  for i in range(start, min(items, start + 500))])


def fresh(template: bytes) -> bytes:
    """``template`` with its marks made unique (no query cache or replay answers it); the
    body is built once, before the victim is measured: the client's own Python stays small."""
    return template.replace(MARK, str(next(_ids)).rjust(len(MARK), "0").encode())


def post_as(path: str, template: bytes, c: httpx.Client) -> None:
    r = c.post(path, content=fresh(template), headers={**AUTH, **JSON})
    assert r.status_code == 200, r.text[:500]


def shapes(scale: float, export_partition: str) -> dict[str, Callable[[httpx.Client], None]]:
    """Each shape: one heavy request of it, answered."""
    mark = MARK.decode()
    query = mark + " " + prose(int((STORE_BODY - 1024) * scale))
    per = int(250_000 * scale)
    count = max(1, int((INGEST_BODY - 4096) * scale) // (8000 + 64))
    bodies = {
        "store_query": {"ops": [{"op": "search", "prefix": ["attacker"], "query": query,
                                 "limit": 10}]},
        "store_puts": {"ops": [{"op": "put", "namespace": ["attacker-puts"], "key": f"p{i}",
                                "value": {"i": i}, "index": [mark + prose(per, i)]}
                               for i in range(31)]},
        "store_searches": {"ops": [{"op": "search", "prefix": ["attacker"],
                                    "query": f"where is {i} {mark}", "limit": 1}
                                   for i in range(max(1, int(10_000 * scale)))]},
        "store_filtered": {"ops": [{"op": "search", "prefix": ["wide"],
                                    "query": f"document {i} {mark}",
                                    "filter": {"kind": "doc", "meta": {"lang": "en"},
                                               "n": {"$gte": 0}}, "limit": 10}
                                   for i in range(8)]},
        "ingest": {"version": 1, "operationId": mark, "partition": "attacker-ingest",
                   "sessionId": mark, "messages": [
                       {"role": "user" if i % 2 else "assistant",
                        "content": mark + prose(8000, i)} for i in range(count)]},
    }
    templates = {name: json.dumps(body).encode() for name, body in bodies.items()}
    templates["recall_64k"] = recall_body(
        "attacker", mark + prose(int((PROVIDER_BODY - 1024) * max(scale, 0.05))))
    paths = {"ingest": "/ingest", "recall_64k": "/memory"}

    def export(c: httpx.Client) -> None:
        with c.stream("GET", "/admin/export", params={"partition": export_partition},
                      headers=ADMIN) as r:
            assert r.status_code == 200
            for _ in r.iter_bytes():
                pass

    out: dict[str, Callable[[httpx.Client], None]] = {
        name: partial(post_as, paths.get(name, "/store"), t) for name, t in templates.items()}
    out["export"] = export
    return out


def victim(c: httpx.Client, times: dict[str, list[float]]) -> None:
    """One victim recall and one /healthz, their seconds appended."""
    t0 = time.perf_counter()
    r = c.post("/memory", content=recall_body("victim", f"where does Vera live? ({next(_ids)})"),
               headers={**AUTH, **JSON})
    t1 = time.perf_counter()
    assert r.status_code == 200, r.text
    h = c.get("/healthz")
    t2 = time.perf_counter()
    assert h.status_code == 200
    times["recall"].append(t1 - t0)
    times["healthz"].append(t2 - t1)


def summary(values: list[float]) -> dict[str, float]:
    return {"p50_ms": round(pct(values, 0.5) * 1000, 1),
            "p99_ms": round(pct(values, 0.99) * 1000, 1), "n": len(values)}


def measure(url: str, rounds: int, heavy: Callable[[httpx.Client], None] | None,
            clients: int, max_seconds: float) -> dict[str, Any]:
    """The victim's samples alone (``heavy`` None) or while ``clients`` tenants send ``heavy``
    again and again."""
    times: dict[str, list[float]] = {"recall": [], "healthz": []}
    done: list[float] = []
    errors: list[str] = []
    stop = threading.Event()

    def attacker() -> None:
        with httpx.Client(base_url=url, timeout=600) as c:
            while not stop.is_set():
                t0 = time.perf_counter()
                try:
                    heavy(c)  # type: ignore[misc]
                except Exception as error:  # reported with the figures, the run goes on
                    errors.append(repr(error)[:300])
                    return
                done.append(time.perf_counter() - t0)

    threads = [threading.Thread(target=attacker, daemon=True) for _ in range(clients)] \
        if heavy is not None else []
    for t in threads:
        t.start()
    started = time.perf_counter()
    with httpx.Client(base_url=url, timeout=600) as c:
        if threads:
            time.sleep(0.2)  # the first heavy requests in the server
        while len(times["recall"]) < rounds or (threads and not done and not errors):
            victim(c, times)
            if time.perf_counter() - started > max_seconds:
                break
    stop.set()
    for t in threads:
        t.join()
    out: dict[str, Any] = {"recall": summary(times["recall"]), "healthz": summary(times["healthz"])}
    if threads:
        out["heavy"] = {"answered": len(done), "errors": errors,
                        "p50_s": round(pct(done, 0.5), 2) if done else None}
    return out


def quiet(url: str, alone_ms: float) -> None:
    """Until the victim's recall is back near its time alone (the server idle again)."""
    with httpx.Client(base_url=url, timeout=600) as c:
        for _ in range(120):
            times: dict[str, list[float]] = {"recall": [], "healthz": []}
            victim(c, times)
            if times["recall"][0] * 1000 <= max(3 * alone_ms, 50):
                return
            time.sleep(0.5)


def options(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="benchmarks hostile", description=__doc__)
    parser.add_argument("--model", type=Path, help="a model folder (default: the bundled one)")
    parser.add_argument("--fake-model", action="store_true", help="the fake embedder")
    parser.add_argument("--rounds", type=int, default=40, help="victim samples per phase")
    parser.add_argument("--clients", type=int, default=1, help="tenants sending a shape")
    parser.add_argument("--scale", type=float, default=1.0, help="of the bodies' limits")
    parser.add_argument("--store-items", type=int, default=5000)
    parser.add_argument("--export-items", type=int, default=40_000)
    parser.add_argument("--max-seconds", type=float, default=180.0, help="per shape")
    parser.add_argument("--shapes", default=",".join(SHAPES))
    parser.add_argument("--repo", type=Path, help="another source tree the server runs from "
                        "(`git archive <commit>`: a before); its model this tree's")
    return parser.parse_args(argv)


def cli(argv: list[str]) -> list[dict[str, Any]]:
    args = options(argv)
    from semmem.stored.namespaces import partition_of

    env = {**ONE_THREAD, "SEMMEM_MAX_CONCURRENCY": "64"}
    if args.model is not None and not args.fake_model:
        env["SEMMEM_MODEL"] = str(args.model.resolve())
    with tempfile.TemporaryDirectory(prefix="semmem-hostile-") as tmp:
        launch = None
        if args.repo is not None:  # ``semmem serve`` of that tree's code
            if not args.fake_model:
                env.setdefault("SEMMEM_MODEL", str(REPO / "models" / "all-MiniLM-L6-v2"))
            launch = f"import runpy, sys; sys.path.insert(0, {str(args.repo.resolve())!r}); " + (
                FAKE_LAUNCH if args.fake_model else "sys.argv = ['semmem', 'serve']; "
                "runpy.run_module('semmem.cli', run_name='__main__')")
        server = ServerProcess(Path(tmp) / "db", env=env, maintenance_delay_s=None,
                               model=not args.fake_model and launch is None, launch=launch)
        server.start().wait_ready(300)
        try:
            url = server.url
            with httpx.Client(base_url=url, timeout=600) as c:
                for text in ("Vera lives in Porto.", "Vera's sister is called Ines.",
                             "Vera cycles to work."):
                    remember(c, "victim", text)
                remember(c, "attacker", "The attacker's note about the harbour.")
                store(c, [{"op": "put", "namespace": ["attacker"], "key": "a",
                           "value": {"v": 1}, "index": ["a note about the harbour"]}])
                t0 = time.perf_counter()
                fill_store(c, "wide", args.store_items, indexed=True)
                fill_store(c, "exported", args.export_items, indexed=False)
                fill_s = round(time.perf_counter() - t0, 1)
            for _ in range(5):  # warm
                measure(url, 2, None, 0, 60)
            alone = measure(url, args.rounds, None, 0, args.max_seconds)
            figures: dict[str, Any] = {
                "model": "fake" if args.fake_model else str(args.model or "bundled"),
                "tree": str(args.repo or "this"),
                "scale": args.scale, "store_items": args.store_items,
                "export_items": args.export_items, "fill_s": fill_s, "alone": alone,
                "shapes": {}}
            heavy = shapes(args.scale, partition_of(("exported",)))
            for name in args.shapes.split(","):
                quiet(url, alone["recall"]["p50_ms"])
                beside = measure(url, args.rounds, heavy[name], args.clients,
                                 args.max_seconds)
                for what in ("recall", "healthz"):
                    beside[f"{what}_ratio"] = round(
                        beside[what]["p99_ms"] / max(alone[what]["p99_ms"], 0.1), 1)
                figures["shapes"][name] = beside
            return [figures]
        finally:
            server.stop()


def table(figures: list[dict[str, Any]]) -> str:
    """The Markdown table of docs/benchmarks.md ("Hostile tenants")."""
    lines = ["| shape | victim recall p50/p99 ms | p99 / alone | /healthz p50/p99 ms | "
             "p99 / alone | heavy requests answered (p50 s) |",
             "| --- | --- | --- | --- | --- | --- |"]
    for f in figures:
        a = f["alone"]
        lines.append(f"| alone ({f['model']}, tree {f.get('tree', 'this')}) | "
                     f"{a['recall']['p50_ms']}/{a['recall']['p99_ms']} | 1× | "
                     f"{a['healthz']['p50_ms']}/{a['healthz']['p99_ms']} | 1× | – |")
        for name, s in f["shapes"].items():
            h = s["heavy"]
            answered = f"{h['answered']} ({h['p50_s']})" + (
                f"; errors: {h['errors'][0]}" if h["errors"] else "")
            lines.append(f"| {name} | {s['recall']['p50_ms']}/{s['recall']['p99_ms']} | "
                         f"**{s['recall_ratio']}×** | {s['healthz']['p50_ms']}/"
                         f"{s['healthz']['p99_ms']} | **{s['healthz_ratio']}×** | {answered} |")
    return "\n".join(lines)
