"""Ingestion: a 500-message session in one call against the batch-embedding time of its pieces.

    .venv/bin/python -m benchmarks ingest [--messages 500] [--rounds 3] [--http] [--fake]

The messages are a LongMemEval-S dev question's haystack turns (``../shared/data``), in order,
as one session. Each round, in turn: the model's own batch embedding of exactly the pieces
the cutter makes (one ``embed_batch`` call over all of them, the encoder's best case), then
``Conversations.ingest`` of the session into a fresh partition (cut, look-up, embedding in
batches, one commit), both in this process on the serving encoder. With ``--http`` also
``POST /ingest`` to a real ``semmem serve`` (the bundled model) on a fresh partition each
round. Medians are printed, and the ratio the issue bounds (≤ 1.25×). ``--fake`` runs the
fake embedder instead: what ingestion costs besides the model.
"""

from __future__ import annotations

import argparse
import asyncio
import glob
import json
import statistics
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from benchmarks.data_sets import LONGMEMEVAL
from semmem.conversations.ingest import Conversations
from semmem.conversations.messages import Message
from semmem.conversations.pieces import SESSION, cut
from semmem.items.address import Address
from semmem.memory import Memory
from semmem.settings import Settings
from semmem.store import Store
from semmem.wiring import limit_blas_threads, load_embedder


def haystack_messages(count: int, data: Path) -> list[dict[str, Any]]:
    """``count`` turns of the dev questions' haystacks, in order, with their session's date."""
    out: list[dict[str, Any]] = []
    files = sorted(glob.glob(str(data / "*.json")))
    for name in files:
        q = json.loads(Path(name).read_text())
        for date, session in zip(q["haystack_dates"], q["haystack_sessions"], strict=True):
            at = datetime.strptime(date.split(" (")[0] + date.split(")")[1], "%Y/%m/%d %H:%M")
            for turn in session:
                if turn["content"].strip():
                    out.append({"role": turn["role"], "content": turn["content"],
                                "at": at.replace(tzinfo=UTC).isoformat()})
                if len(out) == count:
                    return out
    return out


async def run(args: argparse.Namespace) -> None:
    limit_blas_threads()
    if args.fake:  # what ingestion costs besides the model: cut, look-up, commit
        from semmem.embedding.fakes import HashingEmbedder

        embedder: Any = HashingEmbedder()
    else:
        embedder = load_embedder(Settings())
    raw = haystack_messages(args.messages, LONGMEMEVAL.path(args.longmemeval))
    messages = [Message(m["role"], m["content"].strip(), int(datetime.fromisoformat(
        m["at"]).timestamp() * 1000)) for m in raw]
    pieces = [p for m in messages for p in cut(m.content)]
    print(f"{len(messages)} messages, {len(pieces)} pieces, "
          f"{sum(len(m.content) for m in messages) / 1024:.0f} KiB", flush=True)
    embed_s, ingest_s, http_s = [], [], []
    with tempfile.TemporaryDirectory() as tmp:
        store = Store(str(Path(tmp) / "db"), dim=embedder.dim, model_id=embedder.model_id)
        await store.open()
        memory = Memory(store, embedder)
        server = None
        if args.http:
            from tests.support.server import AUTH, JSON, ServerProcess

            server = ServerProcess(Path(tmp) / "served", model=True).start().wait_ready(300)
        try:
            for r in range(args.rounds):
                started = time.perf_counter()
                embedder.embed_batch(pieces)
                embed_s.append(time.perf_counter() - started)
                started = time.perf_counter()
                done = await Conversations(memory).ingest(
                    f"p{r}", Address.of(SESSION, "s"), messages)
                ingest_s.append(time.perf_counter() - started)
                assert done["count"] <= len(pieces)  # a message said twice is stored once
                if server is not None:
                    body = json.dumps({"version": 1, "operationId": f"op{r}",
                                       "partition": f"h{r}", "sessionId": "s",
                                       "messages": raw})
                    with server.client() as c:
                        c.timeout = 600
                        started = time.perf_counter()
                        reply = c.post("/ingest", content=body, headers={**AUTH, **JSON})
                        http_s.append(time.perf_counter() - started)
                        assert reply.status_code == 200, reply.text
                print(f"round {r + 1}: embed {embed_s[-1]:.2f} s, ingest {ingest_s[-1]:.2f} s"
                      + (f", HTTP {http_s[-1]:.2f} s" if http_s else ""), flush=True)
        finally:
            if server is not None:
                server.stop()
            await memory.close()
    embed, ingest = statistics.median(embed_s), statistics.median(ingest_s)
    print(f"median: batch embedding {embed:.2f} s, ingest {ingest:.2f} s "
          f"({ingest / embed:.2f}x)")
    if http_s:
        print(f"median: POST /ingest {statistics.median(http_s):.2f} s "
              f"({statistics.median(http_s) / embed:.2f}x the in-process batch embedding)")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--messages", type=int, default=500)
    parser.add_argument("--longmemeval", type=Path, default=None,
                        help="the LongMemEval-S questions' folder (or $SEMMEM_LONGMEMEVAL)")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--http", action="store_true")
    parser.add_argument("--fake", action="store_true",
                        help="the fake embedder: the cost of everything but the model")
    asyncio.run(run(parser.parse_args()))


if __name__ == "__main__":
    main()
