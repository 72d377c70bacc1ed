"""Recall in the user's language: MemSim (Chinese daily-life memories) and LoCoMo (English),
with the bundled English model and the multilingual one, semmem's ranking and plain cosine.

    .venv/bin/python -m benchmarks multilingual                       # MemSim dev + LoCoMo dev
    .venv/bin/python -m benchmarks multilingual --split held-out      # the files left out
    .venv/bin/python -m benchmarks multilingual --memsim /path/to/MemSim --no-locomo

MemSim (github.com/nuster1128/MemSim; no licence upstream: read where it is, never copied):
``data_generation/final_dataset/messages_and_QAs/*.json``, each a list of trajectories
``{tid, message_list, question_list}``; a file is one partition (its trajectories' messages
are the facts, remembered in order), a question's ``target_step_id`` names its evidence
messages in its trajectory.
Development used only the files ending ``_events.json`` or ``_items.json`` (``--split dev``);
the others are held out. ``--memsim`` is a checkout or a bare mirror (read with ``git show``).

Reported per model and ranking: the share of each question's evidence inside the recall at
512 / 1,024 / 2,048 bytes (gold recall) and recall@5. semmem's ranking is the defaults
calibrated to the model (``semmem.ranking.calibration``); plain cosine has no floor, no
deduplication and no lexical side. Vectors are cached on disk (``SEMMEM_EVAL_CACHE``).
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from benchmarks.data_sets import LOCOMO, MEMSIM
from semmem.embedding.files import default_model_dir
from semmem.evaluation import Evaluation, Summary
from semmem.evaluation.dataset import Fact, LabelledSet, Partition, Query, load_dataset
from semmem.evaluation.embeddings import model_embedder
from semmem.ranking.calibration import calibrated, load_calibration
from semmem.ranking.ranker import RankingConfig

FOLDER = "data_generation/final_dataset/messages_and_QAs"
BUDGETS = (512, 1024, 2048)
MODELS = ("all-MiniLM-L6-v2", "multilingual-e5-small")
_TIME = re.compile(r"(\d{4})年(\d{2})月(\d{2})日\D*(\d{2}):(\d{2})")


def _files(root: Path) -> dict[str, Any]:
    """Every MemSim file's parsed JSON, by name: from a checkout, or a bare mirror."""
    folder = root / FOLDER
    if folder.is_dir():
        return {p.name: json.loads(p.read_text()) for p in sorted(folder.glob("*.json"))}
    names = subprocess.run(["git", "-C", str(root), "ls-tree", "--name-only", f"HEAD:{FOLDER}"],
                           check=True, capture_output=True, text=True).stdout.split()
    return {name: json.loads(subprocess.run(
        ["git", "-C", str(root), "show", f"HEAD:{FOLDER}/{name}"], check=True,
        capture_output=True).stdout) for name in names if name.endswith(".json")}


def _ts(value: str) -> int | None:
    m = _TIME.search(value or "")
    if not m:
        return None
    y, mo, d, h, mi = map(int, m.groups())
    return int(datetime(y, mo, d, h, mi, tzinfo=UTC).timestamp() * 1000)


def is_dev(name: str) -> bool:
    """Whether a MemSim file is on the development side of the split."""
    return name.endswith(("_events.json", "_items.json"))


def memsim(root: Path, split: str) -> LabelledSet:
    """MemSim as a labelled set: one partition per file (one user's memory: every message of
    its trajectories, in order; a trajectory alone is ~6 messages, which any recall holds)."""
    parts: list[Partition] = []
    for name, trajectories in _files(root).items():
        if split != "all" and is_dev(name) != (split == "dev"):
            continue
        part = Partition(name.removesuffix(".json"))
        category = name.split("_", 1)[1].removesuffix(".json")
        for traj in trajectories:
            tid = traj["tid"]
            part.facts.extend(Fact(f"{tid}/{m['mid']}", m["message"], _ts(m.get("time", "")))
                              for m in traj["message_list"])
            for q in traj["question_list"]:
                relevant = frozenset(f"{tid}/{t}" for t in q.get("target_step_id") or [])
                if relevant:
                    part.queries.append(Query(f"{part.name}/{tid}/{q['qid']}", q["question"],
                                              relevant, category))
                else:
                    part.skipped += 1
        parts.append(part)
    return LabelledSet(f"memsim-{split}", parts)


def _row(label: str, s: Summary) -> str:
    gold = " ".join(f"{s.gold_recall(b):6.3f}" for b in BUDGETS)
    return f"{label:44} {gold} {s.recall_at[5]:8.3f}"


def report(name: str, labelled: LabelledSet, folders: list[Path]) -> None:
    """Both rankings for every model on one labelled set."""
    facts = labelled.fact_count
    queries = sum(len(p.queries) for p in labelled.partitions)
    print(f"\n## {name}: {len(labelled.partitions)} partitions, {facts} facts, {queries} "
          "questions; gold recall at " + " / ".join(map(str, BUDGETS)) + " bytes, recall@5")
    for folder in folders:
        started = time.monotonic()
        ev = Evaluation(labelled, model_embedder(folder), budgets=BUDGETS, probes=())
        calibration = load_calibration(folder)
        ranking = calibrated(RankingConfig(), calibration)
        for label, config in (("semmem", ranking), ("plain cosine", RankingConfig.plain_cosine()),
                              ("semmem, uncalibrated", RankingConfig())):
            if label.endswith("uncalibrated") and calibration.identity:
                continue
            print(_row(f"{folder.name} {label}", ev.summary(config)))
        print(f"  ({folder.name}: {time.monotonic() - started:.0f} s; calibration "
              f"{calibration.describe()})")


def main() -> None:
    """Print the comparison."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--memsim", type=Path, default=None)
    parser.add_argument("--split", choices=("dev", "held-out", "all"), default="dev")
    parser.add_argument("--locomo", type=Path, default=None)
    parser.add_argument("--no-locomo", action="store_true")
    parser.add_argument("--no-memsim", action="store_true")
    parser.add_argument("--models", nargs="*", default=list(MODELS))
    args = parser.parse_args()
    folders = [default_model_dir().parent / m for m in args.models]
    if not args.no_memsim:
        report(f"MemSim {args.split}", memsim(MEMSIM.path(args.memsim), args.split), folders)
    if not args.no_locomo:
        locomo = LOCOMO.path(args.locomo)
        report(f"LoCoMo {locomo.name}", load_dataset(locomo), folders)


if __name__ == "__main__":
    main()
