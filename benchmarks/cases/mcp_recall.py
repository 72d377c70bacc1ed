"""MCP recall against the contract's recall over HTTP: same server, same store, same queries.

For each size, seeds a fresh store with synthetic facts (real model, through the core), starts
one real ``semmem serve`` (provider endpoint and ``/mcp``, query cache off so every call embeds
its query) and one ``semmem mcp`` over stdio on the same store, then for each query makes the
same recall on every arm, the arms in a rotating order:

* ``http``  the contract's recall: ``POST /memory``, one keep-alive client;
* ``mcp``   the ``recall`` tool on ``/mcp`` with the SDK's client (2026-07-28, per-request);
* ``mcp-session`` the same over a handshake-era session (``Mcp-Session-Id``);
* ``stdio`` the ``recall`` tool of ``semmem mcp`` with the SDK's client over stdio.

Latency is measured in the client, end to end. The overhead is each MCP arm's p50 minus the
HTTP arm's, and the median of the per-query differences. ``--fake-model`` runs everything with
the hashing embedder instead: the query embedding (10–40 ms with the model, and most of the
noise on a busy machine) drops out, and what is left is the transport.

    .venv/bin/python -m benchmarks mcp_recall --sizes 1000,10000 --recalls 200
    .venv/bin/python -m benchmarks mcp_recall --sizes 1000,10000 --fake-model
    .venv/bin/python -m benchmarks mcp_recall --sizes 1000,10000 --breakdown
"""

from __future__ import annotations

import argparse
import asyncio
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from contextlib import AsyncExitStack
from pathlib import Path
from typing import Any

import httpx
import httpx2
from mcp import Client, StdioServerParameters
from mcp.client.streamable_http import streamable_http_client

from benchmarks.envelopes import (
    NAMES,
    PARTITION,
    QUERIES,
    envelope,
    make_facts,
    seed,
    summary,
)
from semmem.embedding.fakes import HashingEmbedder
from semmem.settings import Settings
from tests.support.server import free_port

REPO = Path(__file__).resolve().parents[2]
TOKEN, MCP_TOKEN = "bench-token-provider", "bench-mcp-token-0000"
Arm = Callable[[str], Awaitable[None]]
# `semmem serve` and `semmem mcp` as their commands run them, with the hashing embedder.
FAKE_SERVE = ("from semmem.embedding.fakes import HashingEmbedder; "
              "from semmem.settings import Settings; "
              "from semmem.web.server import serve; serve(Settings(), embedder=HashingEmbedder())")
FAKE_MCP = ("from semmem.embedding.fakes import HashingEmbedder; "
            "from semmem.settings import Settings; from semmem.mcp.server import run_stdio; "
            "run_stdio(Settings(), embedder=HashingEmbedder())")


async def seed_fake(data: Path, facts: list[str]) -> float:
    """Import the facts with the hashing embedder; returns seconds taken."""
    return await seed(data, facts, HashingEmbedder())


def _env(data: Path, port: int) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items()
           if not k.startswith("SEMMEM_") or k in ("SEMMEM_MODEL", "SEMMEM_TORCH_THREADS")}
    env.update({"SEMMEM_TOKENS": f"{TOKEN},{MCP_TOKEN} partition={PARTITION}",
                "SEMMEM_DATA": str(data), "SEMMEM_PORT": str(port), "SEMMEM_QUERY_CACHE": "0",
                "SEMMEM_LOG_LEVEL": "warning", "SEMMEM_MCP_PARTITION": PARTITION})
    return env


async def _wait_ready(base: str, server: subprocess.Popen[bytes], log: Path) -> None:
    async with httpx.AsyncClient(base_url=base) as client:
        deadline = time.monotonic() + 180
        while True:
            try:
                if (await client.get("/readyz")).status_code == 200:
                    return
            except httpx.TransportError:
                pass
            if server.poll() is not None or time.monotonic() > deadline:
                raise SystemExit(f"server did not start:\n{log.read_text()}")
            await asyncio.sleep(0.1)


async def _measure(data: Path, queries: list[str], max_bytes: int, fake: bool,
                   wanted: list[str]) -> dict[str, list[float]]:
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    env = _env(data, port)
    log = data.parent / "server.log"
    with log.open("w") as sink:
        serve = ["-c", FAKE_SERVE] if fake else ["-m", "semmem.cli", "serve"]
        server = subprocess.Popen([sys.executable, *serve], cwd=REPO,
                                  env=env, stdout=sink, stderr=subprocess.STDOUT)
    try:
        await _wait_ready(base, server, log)
        async with AsyncExitStack() as stack:
            http = await stack.enter_async_context(httpx.AsyncClient(
                base_url=base, headers={"Authorization": f"Bearer {TOKEN}"}, timeout=30))
            bearer = {"Authorization": f"Bearer {MCP_TOKEN}"}
            clients: dict[str, Client] = {}
            for name, mode in (("mcp", "auto"), ("mcp-session", "legacy")):
                if name not in wanted:
                    continue
                transport = await stack.enter_async_context(
                    httpx2.AsyncClient(headers=bearer, timeout=30))
                clients[name] = await stack.enter_async_context(Client(
                    streamable_http_client(base + "/mcp", http_client=transport), mode=mode))
            if "stdio" in wanted:
                command = ["-c", FAKE_MCP] if fake else ["-m", "semmem.cli", "mcp"]
                stdio = StdioServerParameters(command=sys.executable, args=command, env=env,
                                              cwd=REPO)
                clients["stdio"] = await stack.enter_async_context(
                    Client(stdio, read_timeout_seconds=120))

            async def contract(q: str) -> None:
                body = envelope("r", operation="recall", input={"text": q}, maxBytes=max_bytes)
                r = await http.post("/memory", json=body)
                if r.status_code != 200:
                    raise SystemExit(f"recall failed: {r.status_code} {r.text}")

            def tool(client: Client) -> Arm:
                async def call(q: str) -> None:
                    result = await client.call_tool("recall", {"text": q, "max_bytes": max_bytes})
                    if result.is_error:
                        raise SystemExit(f"MCP recall failed: {result.content}")
                return call

            arms: dict[str, Arm] = {"http": contract, **{k: tool(c) for k, c in clients.items()}}
            for q in queries[:10]:  # model, snapshot, connections (stdio loads its own model)
                for arm in arms.values():
                    await arm(q)
            samples: dict[str, list[float]] = {name: [] for name in arms}
            order = list(arms)
            for i, q in enumerate(queries[10:]):
                rotated = order[i % len(order):] + order[:i % len(order)]
                for name in rotated:
                    started = time.perf_counter()
                    await arms[name](q)
                    samples[name].append((time.perf_counter() - started) * 1000)
            return samples
    finally:
        server.terminate()
        server.wait(30)


async def _breakdown(data: Path, queries: list[str], max_bytes: int) -> dict[str, list[float]]:
    """In one process, hashing embedder, no sockets: where the MCP overhead goes."""
    from semmem.mcp.server import build_server
    from semmem.mcp.service import Caller, Service
    from semmem.web.app import create_app

    settings = Settings(data=str(data), tokens=f"{TOKEN},{MCP_TOKEN} partition={PARTITION}",
                        query_cache=0)
    app = create_app(settings, embedder=HashingEmbedder())
    samples: dict[str, list[float]] = {}
    async with app.router.lifespan_context(app):
        runtime = app.state.runtime
        await runtime.ready.wait()
        memory = runtime.require_memory()
        service = Service(runtime, max_bytes=max_bytes)
        caller = Caller(PARTITION, True, "bench")
        args = {"max_bytes": max_bytes}
        http = await _asgi_session(app)
        try:
            async with Client(build_server(service, lambda ctx: caller)) as inproc:
                ids = iter(range(1, 10**9))

                async def asgi_mcp(q: str) -> None:
                    r = await http.post("/mcp", json={
                        "jsonrpc": "2.0", "id": next(ids), "method": "tools/call",
                        "params": {"name": "recall", "arguments": {"text": q, **args}}})
                    assert r.status_code == 200, r.text

                async def asgi_contract(q: str) -> None:
                    body = envelope("r", operation="recall", input={"text": q}, maxBytes=max_bytes)
                    r = await http.post("/memory", json=body,
                                        headers={"Authorization": f"Bearer {TOKEN}"})
                    assert r.status_code == 200, r.text

                async def core(q: str) -> None:
                    await memory.recall(PARTITION, q, max_bytes)

                async def layer(q: str) -> None:
                    await service.call_tool(caller, "recall", {"text": q, **args})

                async def sdk(q: str) -> None:
                    await inproc.call_tool("recall", {"text": q, **args})

                arms: dict[str, Arm] = {"core": core, "semmem MCP layer": layer,
                                        "+ SDK in process": sdk, "ASGI contract": asgi_contract,
                                        "ASGI MCP session": asgi_mcp}
                samples = {name: [] for name in arms}
                for i, q in enumerate(queries):
                    for name, arm in arms.items():
                        started = time.perf_counter()
                        await arm(q)
                        if i >= 10:
                            samples[name].append((time.perf_counter() - started) * 1000)
        finally:
            await http.aclose()
    return samples


async def _asgi_session(app: Any) -> httpx.AsyncClient:
    """An httpx client on the app itself, with an MCP session opened (handshake era)."""
    accept = {"Accept": "application/json, text/event-stream",
              "Authorization": f"Bearer {MCP_TOKEN}"}
    http = httpx.AsyncClient(transport=httpx.ASGITransport(app=app),
                             base_url="http://127.0.0.1", headers=accept)
    opened = await http.post("/mcp", json={
        "jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": {},
            "clientInfo": {"name": "bench", "version": "1"}}})
    http.headers.update({"Mcp-Session-Id": opened.headers["mcp-session-id"],
                         "Mcp-Protocol-Version": "2025-11-25"})
    await http.post("/mcp", json={"jsonrpc": "2.0", "method": "notifications/initialized"})
    return http


def main() -> None:
    """Seed, serve, measure, print."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="1000,10000")
    parser.add_argument("--recalls", type=int, default=200)
    parser.add_argument("--max-bytes", type=int, default=1024)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--fake-model", action="store_true", help="the hashing embedder")
    # With the real model, stdio is a second process with its own model: the two interleaved
    # on two cores disturb each other's embeddings (threads spinning after each call).
    parser.add_argument("--arms", default="http,mcp,mcp-session,stdio",
                        help="comma-separated; http is always measured")
    parser.add_argument("--breakdown", action="store_true",
                        help="in one process, hashing embedder: core, MCP layer, SDK, ASGI")
    args = parser.parse_args()
    rng = random.Random(args.seed)
    pool = [q.format(n=n) for q in QUERIES for n in NAMES]
    load = os.getloadavg()[0]
    model = "hashing embedder" if args.fake_model or args.breakdown else "real model"
    print(f"{os.cpu_count()} CPUs, load {load:.1f}, {model}, query cache off, "
          f"maxBytes {args.max_bytes}; every arm recalls every query, arms in rotating order")
    for size in (int(s) for s in args.sizes.split(",")):
        facts = make_facts(size, rng)
        queries = [rng.choice(pool) for _ in range(args.recalls + 10)]
        with tempfile.TemporaryDirectory(prefix="semmem-mcp-bench-") as tmp:
            data = Path(tmp) / "db"
            if args.breakdown:
                asyncio.run(seed_fake(data, facts))
                parts = asyncio.run(_breakdown(data, queries, args.max_bytes))
                print(f"{size:,} facts, in one process (hashing embedder), p50 per call:")
                for name, values in parts.items():
                    print(f"  {name:18s} {statistics.median(values):6.2f} ms")
                continue
            seeded = asyncio.run(seed_fake(data, facts) if args.fake_model else seed(data, facts))
            samples = asyncio.run(_measure(data, queries, args.max_bytes, args.fake_model,
                                           args.arms.split(",")))
        base = samples["http"]
        print(f"{size:,} facts (seeded in {seeded:.0f} s), {len(base)} recalls per arm:")
        for name, values in samples.items():
            s = summary(values)
            line = (f"  {name:12s} p50 {s['p50_ms']:6.1f}  p95 {s['p95_ms']:6.1f}  "
                    f"mean {s['mean_ms']:6.1f} ms")
            if name != "http":
                paired = statistics.median(v - b for v, b in zip(values, base, strict=True))
                line += (f"   overhead p50 {s['p50_ms'] - summary(base)['p50_ms']:+5.1f} ms, "
                         f"median paired {paired:+5.1f} ms")
            print(line)


if __name__ == "__main__":
    main()
