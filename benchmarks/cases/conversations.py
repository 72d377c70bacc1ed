"""Conversations in, the relevant turn out (issue 47): recall of evidence turns within a budget.

    .venv/bin/python -m benchmarks conversations [--dataset longmemeval|locomo|both]
        [--longmemeval DIR] [--locomo DIR] [--limit N] [--budgets 1024,2048,4096]
        [--data DIR] [--in-process [--asked-at]] [--model NAME]

For each LongMemEval-S dev question (``--longmemeval DIR`` or ``$SEMMEM_LONGMEMEVAL``: its own
~490-turn haystack) and each LoCoMo dev conversation (``--locomo DIR`` or ``$SEMMEM_LOCOMO``: raw
dialogs, category 5 skipped; benchmarks/data_sets.py says where both are published), the
sessions are ingested in date order into a partition of their own through ``POST /ingest`` on a
real ``semmem serve`` with the bundled model (one call per session, ``at`` = the session's date);
each question is then recalled over HTTP at every budget and searched (top 5). Over the same
pieces (read from the server's store once it has stopped) the same run scores plain cosine and
BM25, rendered as plain ``n. text`` lines, and checks that ranking in-process gives what HTTP
gave. Reported per question type and overall:

- **turn coverage**: share of evidence turns with ≥ 60 % of their content words (case-folded
  words, stop words left out) in the recalled text;
- **full coverage**: share of questions (with evidence) whose every evidence turn is covered;
- **answer in text**: share of short answers (≤ 4 words) found verbatim, case-insensitive;
- **session@5**: an evidence session among the top-5 search results (lenient).

``--data DIR`` keeps the server's store there: a second run with the same ``DIR`` ingests only
partitions it does not hold yet (rank again without embedding again). ``--in-process`` skips the
server: pieces cut here, embedded through the evaluation cache (``$SEMMEM_EVAL_CACHE``, outside
the repository), ranked with ``semmem.results`` directly (for tuning). ``--model NAME`` runs
it all with another bundled model (a folder of ``models/``; the server as ``SEMMEM_MODEL``,
the ranking calibrated to it as a server does). ``--asked-at`` (in process) ranks each
LongMemEval question as of the date it was asked, which a recall over HTTP cannot: the
server counts "two weeks ago" from its own clock. The data never enters the repository.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import tempfile
import time
from collections.abc import Callable, Iterable, Sequence
from datetime import datetime
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks.conversation_sets import (
    Answer,
    Dataset,
    Question,
    Session,
    load_locomo,
    load_longmemeval,
    report,
)
from benchmarks.data_sets import LOCOMO, LONGMEMEVAL
from semmem.conversations.pieces import cut
from semmem.evaluation.embeddings import DiskCachedEmbedder, model_embedder
from semmem.items import Item, Vectors, parse_iso
from semmem.ranking.calibration import calibrated, load_calibration
from semmem.ranking.config import RankingConfig
from semmem.ranking.lexical import Bm25Index
from semmem.ranking.packing import pack
from semmem.ranking.ranker import Ranker
from semmem.ranking.turns import piece_fields
from semmem.results import relevant
from semmem.store.views import ItemSet

MODEL = Path(__file__).resolve().parents[2] / "models" / "all-MiniLM-L6-v2"
BUDGETS = (1024, 2048, 4096)


# --- what each system answers ----------------------------------------------------------------

def session_of(item: Item) -> str:
    """The session a piece belongs to."""
    fields = piece_fields(item)
    return fields[0] if fields is not None else ""


def plain_lines(order: Iterable[int], items: Sequence[Item], budget: int) -> str:
    """Pieces as plain ``n. text`` lines in ``order`` (rows) within ``budget``."""
    plain = (Item(it.n, it.text, it.ts, it.updated, 1, it.seq, it.model)
             for it in (items[i] for i in order))
    return pack(plain, budget).text


def baselines(snap: ItemSet, qvec: Vectors, question: str, budgets: Sequence[int],
              bm25: Bm25Index) -> dict[str, Answer]:
    """Plain cosine and BM25 over the same pieces (ties to the lower row)."""
    out = {}
    cosine = snap.vectors @ qvec.reshape(-1)
    lexical, _ = bm25.scores(question)
    for name, scores, keep in (("cosine", cosine, np.ones(len(cosine), bool)),
                               ("bm25", lexical, lexical > 0)):
        rows = np.flatnonzero(keep)
        order = rows[np.lexsort((rows, -scores[rows]))].tolist()
        out[name] = Answer({b: plain_lines(order, snap.items, b) for b in budgets},
                           [session_of(snap.items[i]) for i in order[:5]])
    return out


def in_process(ranker: Ranker, snap: ItemSet, qvec: Vectors, question: str,
               budgets: Sequence[int]) -> Answer:
    """semmem's recall and search, ranked here on the same pieces."""
    texts = {b: relevant(ranker, snap, qvec, question, b, "").text for b in budgets}
    top = ranker.rank(snap, qvec, question, floor=False)[:5]
    return Answer(texts, [session_of(s.item) for s in top])


# --- ingestion -------------------------------------------------------------------------------

def local_pieces(sessions: list[Session], model: str,
                 cutter: Callable[[str], list[str]] = cut) -> list[Item]:
    """The pieces of a haystack as ingestion cuts and numbers them (``--in-process``)."""
    items: list[Item] = []
    for s in sessions:
        at = int(datetime.fromisoformat(s.at.replace("Z", "+00:00")).timestamp() * 1000)
        for m, turn in enumerate(s.turns):
            for p, text in enumerate(cutter(turn.content)):
                n = len(items) + 1
                attrs = {"keyed": {"space": "session", "key": s.id},
                         "piece": {"role": turn.role, "at": s.at, "message": m, "part": p}}
                items.append(Item(n, text, at, at, 1, n, model, attrs))
    return items


async def ingest_http(client: Any, ds: Dataset, done: set[str], marker: Path) -> float:
    """Every haystack not in ``done`` through ``POST /ingest``, a call per session; seconds."""
    from tests.support.server import AUTH

    started = time.perf_counter()
    for k, (partition, sessions) in enumerate(ds.haystacks.items(), 1):
        if partition in done:
            continue
        for i, s in enumerate(sessions):  # a haystack may hold one session id twice
            # Sent as the data holds them: a blank message (a few) is taken and stores nothing.
            messages = [{"role": t.role, "content": t.content, "at": s.at} for t in s.turns]
            if not messages:
                continue
            body = {"version": 1, "operationId": f"{partition}/{i}", "partition": partition,
                    "sessionId": s.id, "messages": messages}
            r = await client.post("/ingest", json=body, headers=AUTH)
            if r.status_code != 200:
                raise SystemExit(f"ingest {partition} {s.id}: {r.status_code} {r.text[:300]}")
        done.add(partition)
        marker.write_text(json.dumps(sorted(done)))
        print(f"  ingested {k}/{len(ds.haystacks)} {partition} "
              f"({time.perf_counter() - started:.0f} s)", file=sys.stderr, flush=True)
    return time.perf_counter() - started


async def ask_http(client: Any, q: Question, budgets: Sequence[int]) -> Answer:
    """semmem's recall at every budget and its top-5 search, over HTTP."""
    from tests.support.server import AUTH, iso_in

    async def call(op: str, **fields: Any) -> dict[str, Any]:
        body = {"version": 1, "operationId": f"{q.id}/{op}/{time.time_ns()}",
                "partition": q.partition, "access": "read-write", "deadlineAt": iso_in(120),
                **fields}
        r = await client.post("/memory", headers=AUTH, json=body)
        if r.status_code != 200:
            raise SystemExit(f"{op} {q.id}: {r.status_code} {r.text[:300]}")
        out: dict[str, Any] = r.json()
        return out

    texts = {}
    for b in budgets:
        found = await call(f"r{b}", operation="recall", input={"text": q.text}, maxBytes=b)
        texts[b] = found["text"]
    found = await call("s", operation="tool", tool="search",
                       arguments={"query": q.text, "limit": 5})
    top = [str(e.get("sessionId", "")) for e in found["result"]["items"]]
    return Answer(texts, top)


async def stored_sets(data: Path, partitions: Iterable[str], model: Path = MODEL
                      ) -> dict[str, ItemSet]:
    """Each partition's live pieces and vectors, read from the (stopped) server's store."""
    from semmem.settings import Settings
    from semmem.wiring import make_store

    embedder = model_embedder(model)
    store = make_store(Settings(data=str(data), model=model), embedder)
    await store.open(check_model=False)
    try:
        out = {}
        for p in partitions:
            snap = await store.snapshot(p)
            out[p] = ItemSet(list(snap.items), np.asarray(snap.vectors, np.float32))
        return out
    finally:
        await store.close()


# --- the run ---------------------------------------------------------------------------------

def _at(ms: int) -> Callable[[], int]:
    """A clock stopped at ``ms``."""
    return lambda: ms


def score_all(ds: Dataset, sets: dict[str, ItemSet], embed: Callable[[list[str]], Vectors],
              budgets: Sequence[int], semmem: list[Answer] | None, model: Path = MODEL,
              asked_at: bool = False) -> dict[str, list[Answer]]:
    """Baselines (and semmem in-process, or compared with ``semmem`` from HTTP); ``embed``
    embeds the questions (as the model embeds a search); ``asked_at``: semmem in-process
    ranks each question as of its date, where it has one."""
    config = calibrated(RankingConfig.defaults(), load_calibration(model))
    ranker = Ranker(config)
    qvecs = embed([q.text for q in ds.questions])
    bm25 = {p: Bm25Index.build([it.text for it in s.items]) for p, s in sets.items()}
    here, base = [], []
    for q, qvec in zip(ds.questions, qvecs, strict=True):
        snap = sets[q.partition]
        ranks = Ranker(config, clock=_at(parse_iso(q.asked))) if asked_at and q.asked \
            else ranker
        here.append(in_process(ranks, snap, qvec, q.text, budgets))
        base.append(baselines(snap, qvec, q.text, budgets, bm25[q.partition]))
    if semmem is not None:
        same = sum(a.texts == b.texts for a, b in zip(semmem, here, strict=True))
        print(f"{ds.name}: in-process recall identical to HTTP for {same} of "
              f"{len(here)} questions", file=sys.stderr)
    return {"semmem": semmem if semmem is not None else here,
            "cosine": [b["cosine"] for b in base], "bm25": [b["bm25"] for b in base]}


async def run_server(datasets: list[Dataset], data: Path, budgets: Sequence[int],
                     model: Path = MODEL) -> dict[str, list[Answer]]:
    """Ingest and ask over HTTP on a real server; returns semmem's answers per dataset."""
    import httpx

    from tests.support.server import ServerProcess

    marker = data / "ingested.json"
    done = set(json.loads(marker.read_text())) if marker.exists() else set()
    server = ServerProcess(data / "store", model=True, log=data / "server.log",
                           maintenance_delay_s=None, env={"SEMMEM_MODEL": str(model)})
    data.mkdir(parents=True, exist_ok=True)
    server.start().wait_ready(300)
    answers = {}
    try:
        async with httpx.AsyncClient(base_url=server.url, timeout=600) as client:
            for ds in datasets:
                took = await ingest_http(client, ds, done, marker)
                print(f"{ds.name}: ingest {took:.0f} s", file=sys.stderr)
                answers[ds.name] = [await ask_http(client, q, budgets) for q in ds.questions]
    finally:
        server.stop()
    return answers


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--dataset", choices=("longmemeval", "locomo", "both"),
                        default="both")
    parser.add_argument("--longmemeval", type=Path, default=None,
                        help="the LongMemEval-S questions' folder (or $SEMMEM_LONGMEMEVAL)")
    parser.add_argument("--locomo", type=Path, default=None,
                        help="the LoCoMo conversations' folder (or $SEMMEM_LOCOMO)")
    parser.add_argument("--limit", type=int, default=None, help="questions per dataset")
    parser.add_argument("--budgets", default=",".join(map(str, BUDGETS)))
    parser.add_argument("--data", type=Path, default=None,
                        help="keep the server's store here (reused by a later run)")
    parser.add_argument("--in-process", action="store_true",
                        help="no server: cut, embed (cached) and rank here")
    parser.add_argument("--asked-at", action="store_true",
                        help="with --in-process: rank each question as of the date it was asked")
    parser.add_argument("--model", default=MODEL.name,
                        help="the bundled model to run with (a folder of models/)")
    parser.add_argument("--ingested-only", action="store_true",
                        help="only the questions whose partitions --data already holds")
    args = parser.parse_args()
    if args.asked_at and not args.in_process:
        parser.error("--asked-at needs --in-process: a server counts from its own clock")
    budgets = [int(b) for b in args.budgets.split(",")]
    datasets = []
    if args.dataset in ("longmemeval", "both"):
        datasets.append(load_longmemeval(LONGMEMEVAL.path(args.longmemeval), args.limit))
    if args.dataset in ("locomo", "both"):
        datasets.append(load_locomo(LOCOMO.path(args.locomo), args.limit))
    if args.ingested_only and args.data is not None:
        marker = args.data / "ingested.json"
        held = set(json.loads(marker.read_text())) if marker.exists() else set()
        for ds in datasets:
            ds.questions = [q for q in ds.questions if q.partition in held]
            ds.haystacks = {p: s for p, s in ds.haystacks.items() if p in held}
    model = MODEL.parent / args.model
    embedder: DiskCachedEmbedder = model_embedder(model)
    started = time.perf_counter()
    data = args.data or Path(tempfile.mkdtemp(prefix="semmem-conversations-"))
    served = None if args.in_process else asyncio.run(run_server(datasets, data, budgets,
                                                                  model))
    if args.in_process and args.data is None:
        data.rmdir()
    for ds in datasets:
        if served is None:
            sets = {}
            for p, sessions in ds.haystacks.items():
                items = local_pieces(sessions, embedder.model_id)
                sets[p] = ItemSet(items, embedder.embed_batch([it.text for it in items]))
        else:
            sets = asyncio.run(stored_sets(data / "store", ds.haystacks, model))
        pieces = sum(s.size for s in sets.values())
        print(f"{ds.name}: {len(sets)} partitions, {pieces} pieces", file=sys.stderr)
        answers = score_all(ds, sets, embedder.embed_queries, budgets,
                            None if served is None else served[ds.name], model, args.asked_at)
        print(report(ds.name, ds.questions, answers, budgets), flush=True)
    where = "" if args.in_process else f"; store {data}"
    print(f"\n({time.perf_counter() - started:.0f} s{where})", file=sys.stderr)


if __name__ == "__main__":
    main()
