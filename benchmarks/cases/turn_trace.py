"""Where a turn's wall time goes, over HTTP: the critical path of a turn of 4 remembers + 1
update sent at once, against one remember, step by step.

    .venv/bin/python -m benchmarks turn_trace --facts 10000 --turns 200
    .venv/bin/python -m benchmarks turn_trace --turns 200 --against /path/to/other/checkout

Seeds one partition as ``recall --served`` does and serves it with ``semmem serve`` (real model,
shipped settings), a recording tracer installed in the server before it starts: every span
semmem opens (request, embed, hints, write view, commit and the commit's steps) is kept with
its start and end on the monotonic clock the client reads too, and so are each model call
(its texts), each group's gather wait, each hint product, each snapshot step after a commit and
each ``AsyncTable.uri``. The client sends blocks of 10 single remembers (each followed by a
recall, as ``recall --served``) then 10 turns back to back (each updating a fact of the block),
every request tagged by a header. Per turn (and per single remember) the server's events cut
its wall time into consecutive segments of the critical path; the medians are printed, with
the turn's ratio to one remember.

``--floor`` measures instead what the model alone takes, in this process, on the one-thread
session a server uses: one text, four, five, and one then four (a turn's two calls), p50 over
``--turns`` rounds, interleaved.

``--against DIR`` serves a second copy of the partition from another checkout's code and
alternates the blocks between the two servers, so both see the same machine load (the
measure for a before/after on a shared machine); printed: both breakdowns, and the paired
difference of the blocks' medians (B − A) with a bootstrap 95 % interval.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import shutil
import signal
import statistics
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx

from benchmarks.envelopes import envelope, make_facts
from benchmarks.harness import seed_partition as seed
from benchmarks.harness import serve_tree as serve
from tests.support.server import REPO, TOKEN, free_port

TAG = "x-bench-tag"
BLOCK = 10

# Run in the server (``python -c``) before ``semmem serve``: the recorder, installed as
# semmem's tracer, and timings of a few steps without spans of their own. A step another
# checkout does not have is left out.
RECORDER = r'''
import asyncio, contextlib, contextvars, json, os, signal, sys, threading, time
from semmem import tracing

_tag = contextvars.ContextVar("bench_tag", default=None)
events = []

class _Rec:
    def __init__(self): self.attrs = {}
    def set(self, key, value): self.attrs[key] = value
    def rename(self, name): self.attrs["name"] = name
    def fail(self, code): self.attrs["error"] = code

class Recorder:
    @contextlib.contextmanager
    def span(self, name, carrier, server):
        token = _tag.set(carrier.get("''' + TAG + r'''")) if server and carrier else None
        rec, t0 = _Rec(), time.perf_counter_ns()
        try:
            yield rec
        finally:
            events.append((name, _tag.get(), t0, time.perf_counter_ns(), rec.attrs))
            if token is not None:
                _tag.reset(token)
    def trace_id(self): return None

tracing.install(Recorder())

def timed(module, cls, method, name, attrs=lambda a: {}):
    try:
        owner = getattr(__import__(module, fromlist=[cls]), cls)
        inner = getattr(owner, method)
    except (ImportError, AttributeError):
        return
    if asyncio.iscoroutinefunction(inner):
        async def wrapper(*a, **k):
            t0 = time.perf_counter_ns()
            try:
                return await inner(*a, **k)
            finally:
                events.append((name, _tag.get(), t0, time.perf_counter_ns(), attrs(a)))
    else:
        def wrapper(*a, **k):
            t0 = time.perf_counter_ns()
            try:
                return inner(*a, **k)
            finally:
                events.append((name, _tag.get(), t0, time.perf_counter_ns(), attrs(a)))
    setattr(owner, method, wrapper)

timed("semmem.embedding.onnx", "OnnxEmbedder", "embed_batch", "model",
      lambda a: {"texts": len(a[1])})
timed("semmem.store.commit.writes", "Writer", "_gather", "gather")
timed("semmem.store.commit.writes", "Writer", "write", "queued")
timed("semmem.store.reads.snapshots", "Snapshots", "_forward_own", "follow")
timed("semmem.ranking.similar", "Rows", "_score", "product")
timed("lancedb.table", "AsyncTable", "uri", "uri")

OUT = sys.argv[1]
def dump(*_):
    with open(OUT + ".part", "w") as out:
        json.dump(events, out)
    os.replace(OUT + ".part", OUT)
signal.signal(signal.SIGUSR1, dump)  # uvicorn ends on SIGTERM without running atexit
sys.argv = ["semmem", "serve"]
from semmem.cli import main
main()
'''

# Events summed per turn (or remember) besides the critical path's segments.
SUMS = (("product", "hint products"), ("follow", "snapshot step after the commit"),
        ("uri", "AsyncTable.uri calls"), ("semmem.write_view", "write views"),
        ("semmem.commit.files", "· commit: files written"),
        ("semmem.fsync.files", "· commit: fsync of the files"),
        ("semmem.commit.engine", "· commit: Lance's commit"),
        ("semmem.fsync.manifest", "· commit: fsync of the manifest"))


def serve_traced(data: Path, port: int, repo: Path, log: Path, out: Path
                 ) -> subprocess.Popen[bytes]:
    """``semmem serve`` of ``repo``'s code with the recorder, ready."""
    return serve(data, port, repo, log, argv=("-c", RECORDER, str(out)))


class Client:
    """One server's requests, each tagged and timed on the client's side."""

    def __init__(self, client: httpx.AsyncClient, facts: Any) -> None:
        self.client = client
        self.facts = facts
        self.ids = 0
        self.sent: dict[str, tuple[int, int]] = {}  # tag: (sent, answered) ns
        self.turns: list[tuple[int, int, int]] = []  # turn, started, ended (ns)

    async def post(self, tag: str, body: dict[str, Any]) -> dict[str, Any]:
        self.ids += 1
        body = {**body, "operationId": f"op-{self.ids}"}
        t0 = time.perf_counter_ns()
        r = await self.client.post("/memory", json=body, headers={TAG: tag})
        self.sent[tag] = (t0, time.perf_counter_ns())
        if r.status_code != 200:
            raise SystemExit(f"request failed: {r.status_code} {r.text}")
        result: dict[str, Any] = r.json()
        return result

    async def remember(self, tag: str) -> int:
        body = await self.post(tag, envelope("-", operation="tool", tool="remember",
                                             arguments={"text": next(self.facts)}))
        return int(body["result"]["n"])

    async def update(self, tag: str, n: int) -> None:
        await self.post(tag, envelope("-", operation="tool", tool="update",
                                      arguments={"n": n, "text": next(self.facts)}))

    async def recall(self, tag: str) -> None:
        await self.post(tag, envelope("-", operation="recall",
                                      input={"text": next(self.facts)}, maxBytes=1024))

    async def block(self, first: int) -> None:
        """10 single remembers, each followed by a recall, then 10 turns back to back, each
        updating one of those facts."""
        numbers = []
        for i in range(first, first + BLOCK):
            numbers.append(await self.remember(f"x{i}/remember"))
            await self.recall(f"x{i}/recall")
        for i, n in zip(range(first, first + BLOCK), numbers, strict=True):
            t0 = time.perf_counter_ns()
            await asyncio.gather(*(self.remember(f"t{i}/r{k}") for k in range(4)),
                                 self.update(f"t{i}/u", n))
            self.turns.append((i, t0, time.perf_counter_ns()))


async def drive(ports: list[int], facts: list[str], turns: int) -> list[Client]:
    """The blocks, alternating between the servers (A B, then B A, …)."""
    headers = {"Authorization": f"Bearer {TOKEN}"}
    texts = iter(facts)
    clients, https = [], []
    try:
        for port in ports:
            https.append(httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}",
                                           headers=headers, timeout=60,
                                           limits=httpx.Limits(max_connections=16)))
            clients.append(Client(https[-1], texts))
        for c in clients:
            for i in range(10):  # model, snapshot, connections
                await c.recall(f"warm-{i}")
        for b, first in enumerate(range(0, turns, BLOCK)):
            for c in clients if b % 2 == 0 else clients[::-1]:
                await c.block(first)
    finally:
        for h in https:
            await h.aclose()
    return clients


def ms(ns: float) -> float:
    return ns / 1e6


def path(requests: list[dict[str, Any]], model: list[Any], commits: list[Any],
         wall: float) -> dict[str, float]:
    """The critical path of one turn (or one remember), in consecutive segments that add up
    to its wall time (ms from the first request sent), and a few sums."""
    handler = [r["steps"]["semmem.request"][0] for r in requests]
    embeds = [r["steps"]["semmem.embed"][0] for r in requests if "semmem.embed" in r["steps"]]
    hints = [r["steps"]["semmem.hints"][0] for r in requests if "semmem.hints" in r["steps"]]
    marks = [
        ("HTTP in: first request to its handler", min(h[0] for h in handler)),
        ("handler to the model's first call", model[0][0] if model else embeds[0][0]),
        ("model calls (and the gaps between them)", model[-1][1] if model else embeds[0][1]),
        ("last embed end to last hints end", max(h[1] for h in hints)),
        ("to the first commit: gather, write view, decide",
         commits[0][0] if commits else max(h[1] for h in hints)),
        ("commit(s), first start to last end", commits[-1][1] if commits else 0.0),
        ("to the last handler's end", max(h[1] for h in handler)),
        ("HTTP out: to the last answer at the client", wall),
    ]
    out, at = {}, 0.0
    for name, mark in marks:
        mark = max(mark, at)
        out[name] = mark - at
        at = mark
    out["wall"] = wall
    out["model busy (sum of calls)"] = sum(b - a for a, b, _ in model)
    out["model calls"] = len(model)
    out["texts in the first call"] = model[0][2] if model else 0
    out["group commits"] = len(commits)
    for step, label in SUMS:
        out[label] = sum(b - a for r in requests for a, b, _ in r["steps"].get(step, []))
    return out


def analyse(client: Client, events: list[Any]) -> dict[str, Any]:
    """Per turn and per single remember: the critical path (``path``) and every request's
    steps (ms from the start)."""
    by_tag: dict[str, list[Any]] = {}
    models = []
    for name, tag, t0, t1, attrs in events:
        if tag is not None:
            by_tag.setdefault(tag, []).append((name, t0, t1, attrs))
        elif name == "model":  # on the model thread: placed by time
            models.append((t0, t1, attrs["texts"]))

    def shape(tags: list[str], start: int, end: int) -> dict[str, Any]:
        requests, commits = {}, []
        for tag in tags:
            steps: dict[str, list[Any]] = {}
            for name, t0, t1, attrs in by_tag.get(tag, []):
                steps.setdefault(name, []).append((ms(t0 - start), ms(t1 - start), attrs))
                if name == "semmem.commit":
                    commits.append((ms(t0 - start), ms(t1 - start),
                                    attrs.get("semmem.commit.group_size")))
            s, a = client.sent[tag]
            requests[tag] = {"sent": ms(s - start), "answered": ms(a - start), "steps": steps}
        model = sorted((ms(t0 - start), ms(t1 - start), n) for t0, t1, n in models
                       if start <= t0 <= end)
        return {"wall": ms(end - start), "requests": requests, "model": model,
                "commits": sorted(commits),
                "path": path(list(requests.values()), model, sorted(commits), ms(end - start))}

    turns = [shape([f"t{i}/r{k}" for k in range(4)] + [f"t{i}/u"], start, end)
             for i, start, end in client.turns]
    singles = [shape([tag], *client.sent[tag]) for tag in client.sent
               if tag.startswith("x") and tag.endswith("/remember")]

    def median(shaped: list[dict[str, Any]]) -> dict[str, float]:
        return {k: statistics.median(s["path"][k] for s in shaped)
                for k in shaped[0]["path"]}

    return {"turn": median(turns), "single": median(singles), "turns": turns,
            "singles": singles}


def blocks(report: dict[str, Any], key: str) -> list[float]:
    """The median wall time of each block's turns or single remembers."""
    walls = [s["wall"] for s in report[key]]
    return [statistics.median(walls[i:i + BLOCK]) for i in range(0, len(walls), BLOCK)]


def paired(a: list[float], b: list[float]) -> tuple[float, float, float]:
    """The median of the blocks' differences (b − a), and a bootstrap 95 % interval."""
    diffs = [y - x for x, y in zip(a, b, strict=True)]
    rng = random.Random(1)
    boots = sorted(statistics.median(rng.choices(diffs, k=len(diffs))) for _ in range(2000))
    return statistics.median(diffs), boots[50], boots[1949]


def floor(rounds: int) -> None:
    """The model alone: p50 ms of one call of 1, 4 and 5 texts, and of 1 then 4."""
    from semmem.embedding.files import default_model_dir
    from semmem.embedding.onnx import OnnxEmbedder

    model = OnnxEmbedder.load(default_model_dir())
    texts = iter(make_facts(20 * rounds + 100, random.Random(5)))

    def call(*sizes: int) -> float:
        batches = [[next(texts) for _ in range(n)] for n in sizes]
        t0 = time.perf_counter()
        for batch in batches:
            model.embed_batch(batch)
        return (time.perf_counter() - t0) * 1000

    for _ in range(10):
        call(4)
    shapes: dict[str, tuple[int, ...]] = {"1 text": (1,), "4 texts": (4,), "5 texts": (5,),
                                          "1 text, then 4": (1, 4)}
    got: dict[str, list[float]] = {k: [] for k in shapes}
    for _ in range(rounds):
        for k, sizes in shapes.items():
            got[k].append(call(*sizes))
    one = statistics.median(got["1 text"])
    for k, v in got.items():
        print(f"  {k:16s} p50 {statistics.median(v):6.2f} ms  "
              f"({statistics.median(v) / one:.2f}× one text)")


def main() -> None:
    """Seed, serve with the recorder (twice with ``--against``), drive, print."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--facts", type=int, default=10_000)
    parser.add_argument("--turns", type=int, default=200, help="a multiple of 10")
    parser.add_argument("--server-repo", type=Path, default=REPO)
    parser.add_argument("--against", type=Path, help="another checkout, served as B")
    parser.add_argument("--data", type=Path, help="a seeded store to copy (else seeded here)")
    parser.add_argument("--seed", type=int, default=11)
    parser.add_argument("--json", type=Path, help="write every turn's events here")
    parser.add_argument("--floor", action="store_true", help="the model alone, in process")
    args = parser.parse_args()
    if args.floor:
        floor(args.turns)
        return
    facts = make_facts(20_000, random.Random(args.seed))
    repos = [args.server_repo.resolve()] + ([args.against.resolve()] if args.against else [])
    with tempfile.TemporaryDirectory(prefix="semmem-turn-") as tmp:
        seeded = args.data
        if seeded is None:
            seeded = Path(tmp) / "seeded"
            asyncio.run(seed(seeded, args.facts))
        servers, ports, outs = [], [], []
        try:
            for k, repo in enumerate(repos):
                data = Path(tmp) / f"db{k}"
                shutil.copytree(seeded, data)
                ports.append(free_port())
                outs.append(Path(tmp) / f"events{k}.json")
                servers.append(serve_traced(data, ports[-1], repo, Path(tmp) / f"server{k}.log",
                                            outs[-1]))
            clients = asyncio.run(drive(ports, facts, args.turns))
            for server in servers:
                server.send_signal(signal.SIGUSR1)
            deadline = time.monotonic() + 60
            while not all(o.exists() for o in outs) and time.monotonic() < deadline:
                time.sleep(0.1)
        finally:
            for server in servers:
                server.terminate()
            for server in servers:
                server.wait(30)
        reports = [analyse(c, json.loads(o.read_text())) for c, o in zip(clients, outs,
                                                                          strict=True)]
    if args.json is not None:
        args.json.write_text(json.dumps(reports, indent=1))
    names = ["A", "B"][:len(repos)]
    print(f"{args.turns} turns and as many single remembers per server, {args.facts} facts; "
          f"medians, ms (the first eight rows add up to about the wall time)")
    for name, repo in zip(names, repos, strict=True):
        print(f"  {name}: {repo}")
    header = "".join(f" {n + ': remember':>13s} {n + ': turn':>9s}" for n in names)
    print(f"  {'':52s}{header}")
    for key in reports[0]["turn"]:
        row = "".join(f" {r['single'][key]:13.2f} {r['turn'][key]:9.2f}" for r in reports)
        print(f"  {key:52s}{row}")
    for name, r in zip(names, reports, strict=True):
        print(f"  {name}: turn / one remember {r['turn']['wall'] / r['single']['wall']:.2f}×")
    if len(reports) == 2:
        for key in ("singles", "turns"):
            mid, low, high = paired(blocks(reports[0], key), blocks(reports[1], key))
            print(f"  B − A, {key}: {mid:+.2f} ms (95 % {low:+.2f} to {high:+.2f}), "
                  "block medians paired")


if __name__ == "__main__":
    main()
