"""The forget window as measured: how long after a forget its text and vector are in no file.

    .venv/bin/python -m benchmarks forget_window                 # shipped defaults
    .venv/bin/python -m benchmarks forget_window --cli           # the forget made by the CLI
    .venv/bin/python -m benchmarks forget_window --edit          # a metadata value replaced
    .venv/bin/python -m benchmarks forget_window --stdio         # short stdio sessions alone

A real ``semmem serve`` (fake embedder: the model is beside the point) with the shipped
maintenance settings on a temp store; a fact is remembered, a few more written, then it is
forgotten — through the server, or by another process with no maintenance of its own — and
every file is scanned, raw and decoded by Lance's reader, until neither the text nor its
vector is found (``--edit``: the fact's metadata value, replaced by ``PATCH /admin/items``,
until neither it nor its tag is found). ``--stdio``: no server; ``semmem mcp`` sessions through
the MCP SDK's client, the forget in one that ends 3 s later, then sessions of 8 s each making
one recall, until the text and vector are gone. Prints the seconds and the documented bound.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import tempfile
import time
from pathlib import Path

import httpx

from semmem.embedding.fakes import HashingEmbedder
from semmem.items.metadata import tag
from semmem.memory import Memory
from tests.support.files import decoded_hits, decoded_with
from tests.support.server import ADMIN, ServerProcess
from tests.support.web import remember, send, tool

SECRET = "the secret of the window benchmark quartz"
PIN = "8841-window-benchmark-pin"


def edit(c: httpx.Client, n: int) -> None:
    """Give fact ``n`` the metadata value ``--edit`` replaces, and see it on disk."""
    r = c.patch("/admin/items", params={"partition": "p", "n": n},
                json={"metadata": {"pin": PIN}}, headers=ADMIN)
    assert r.status_code == 200, r.text


async def stdio_window(data: Path, vector: object, timeout: float) -> tuple[float, int]:
    """Seconds from a forget in a stdio session to no file holding the text or its vector,
    and the sessions that followed, with the shipped maintenance settings."""
    from tests.support.mcp import ok, stdio_client, stdio_params

    params = stdio_params(data, "p", SEMMEM_MAINTENANCE_DELAY_S="2")
    async with stdio_client(params) as client:
        n = ok(await client.call_tool("remember", {"text": SECRET}))["n"]
        for i in range(3):
            ok(await client.call_tool("remember", {"text": f"an ordinary fact {i}"}))
        assert decoded_with(data, SECRET, vector)
        ok(await client.call_tool("forget", {"n": n}))
        started = time.monotonic()
        await asyncio.sleep(3.0)  # the scenario: the session ends 3 s after the forget
    sessions = 0
    while decoded_with(data, SECRET, vector):
        if time.monotonic() - started > timeout:
            return float("nan"), sessions
        async with stdio_client(params) as client:  # a one-recall task, 8 s long
            ok(await client.call_tool("recall", {"text": "what is the secret?"}))
            await asyncio.sleep(8.0)
        sessions += 1
    return time.monotonic() - started, sessions


def main() -> None:
    """Command line: print the measured window as JSON."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--cli", action="store_true", help="forget from another process")
    ap.add_argument("--edit", action="store_true",
                    help="replace a metadata value (admin PATCH) instead of forgetting")
    ap.add_argument("--timeout", type=float, default=120.0)
    ap.add_argument("--stdio", action="store_true",
                    help="no server: short semmem mcp sessions alone")
    args = ap.parse_args()
    vector = HashingEmbedder().embed_batch([SECRET])[0]
    if args.stdio:
        with tempfile.TemporaryDirectory(prefix="semmem-window-") as tmp:
            took, sessions = asyncio.run(stdio_window(Path(tmp) / "db", vector, args.timeout))
        print(json.dumps({"forget_by": "stdio",
                          "gone_after_s": round(took, 1) if took == took else None,
                          "sessions_after": sessions,
                          "documented_bound_s": "26 while a session starts, runs or ends "
                                                "past the retention"}))
        sys.exit(0 if took == took else 1)
    with tempfile.TemporaryDirectory(prefix="semmem-window-") as tmp:
        data = Path(tmp) / "db"
        server = ServerProcess(data, maintenance_delay_s=None).start().wait_ready()
        try:
            with server.client() as c:
                n = remember(c, "p", SECRET)["n"]
                for i in range(3):
                    remember(c, "p", f"an ordinary fact {i}")
                assert decoded_with(data, SECRET, vector)
                if args.edit:
                    edit(c, n)
                    assert decoded_hits(data, [PIN, tag("pin", PIN)]) == {0, 1}
                started = time.monotonic()
                if args.edit:
                    r = c.patch("/admin/items", params={"partition": "p", "n": n},
                                json={"metadata": {"pin": "redacted"}}, headers=ADMIN)
                    assert r.status_code == 200, r.text
                elif args.cli:
                    async def forget() -> None:
                        memory = await Memory.open(str(data), HashingEmbedder())
                        await memory.forget("p", n)
                        await memory.close()
                    asyncio.run(forget())
                else:
                    assert send(c, tool("forget", {"n": n})).status_code == 200
            while (decoded_hits(data, [PIN, tag("pin", PIN)]) if args.edit
                   else decoded_with(data, SECRET, vector)):
                if time.monotonic() - started > args.timeout:
                    print(json.dumps({"gone_after_s": None, "timeout_s": args.timeout}))
                    sys.exit(1)
                time.sleep(0.2)
            took = time.monotonic() - started
        finally:
            server.stop()
    print(json.dumps({"forget_by": "edit" if args.edit else "cli" if args.cli else "server",
                      "gone_after_s": round(took, 1),
                      "documented_bound_s": "26 + two passes (+ 2 s polling from the CLI)"}))


if __name__ == "__main__":
    main()
