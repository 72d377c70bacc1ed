"""Which rule lists a fact only when it stands out: the figures behind docs/consolidation.md.

    SEMMEM_EVAL_CACHE=/tmp/semmem-eval-cache .venv/bin/python -m benchmarks quiet_hints

For every candidate rule (``semmem/evaluation/standout.py``) over its parameter grid: the share
of each class of both labelled pair sets whose fact is listed in a memory (short pairs: one
memory of every ``old`` text; long pairs: one memory per person), and the hints per remember of
each LoCoMo dev conversation loaded fact by fact. Each rule's parameter is chosen on the tune
halves and the tune conversations; the held-out halves and the other conversations report it.
Then the trade-off curve of the shipped rule. Embeddings of the bundled model (ONNX), cached.
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from pathlib import Path

from benchmarks.data_sets import LOCOMO
from semmem.embedding.files import default_model_dir
from semmem.evaluation.dataset import load_locomo
from semmem.evaluation.embeddings import model_embedder
from semmem.evaluation.similar import CLASSES, Pair, load_pairs
from semmem.evaluation.standout import CANDIDATES, Memory, choose, memories, row_of, sweep
from semmem.items import Vectors
from semmem.ranking.similar import STANDOUT
from semmem.wiring import limit_blas_threads

DATA = Path(__file__).resolve().parents[2] / "tests" / "data"
TUNE_CONVERSATIONS = ("26", "30")


def person(pair: Pair) -> str:
    """The person a long pair is about (its first word, without a possessive)."""
    return pair.old.split()[0].removesuffix("'s")


def main() -> None:
    """Sweep every candidate, choose on tune, print the tables."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--locomo", type=Path, default=None)
    locomo = LOCOMO.path(parser.parse_args().locomo)  # before the model loads
    limit_blas_threads()
    embedder = model_embedder(default_model_dir())
    pair_sets: dict[str, Sequence[Memory]] = {
        "short": memories(load_pairs(DATA / "similar_pairs.jsonl"), embedder.embed_batch),
        "long": memories(load_pairs(DATA / "similar_long_pairs.jsonl"), embedder.embed_batch,
                         person),
    }
    conversations: dict[str, tuple[Sequence[str], Vectors]] = {}
    for path in sorted(locomo.glob("*.json")):
        texts = [fact.text for fact in load_locomo(path).facts]
        conversations[path.stem] = (texts, embedder.embed_batch(texts))
    names = list(conversations)
    held = [c for c in names if c not in TUNE_CONVERSATIONS]
    classes = " ".join(k[:4] for k in CLASSES)
    print(f"pair shares listed (%), per set (short | long): {classes}; hints per remember on "
          f"conversations (tune {', '.join(TUNE_CONVERSATIONS)}; held out {', '.join(held)})\n")
    print(f"{'rule':30} {'param':>6} | tune: short, long, conversations | held out: same")
    curves = {}
    for label, (make, grid) in CANDIDATES.items():
        points = sweep(make, grid, pair_sets, conversations)
        curves[label] = points
        best = choose(points, TUNE_CONVERSATIONS)
        tune = row_of(best, "tune", TUNE_CONVERSATIONS)
        out = row_of(best, "held_out", held)
        print(f"{label:30} {best.parameter:6.3f} | {' '.join(tune)} | {' '.join(out)}")
    print(f"\ntrade-off of 'z over the rest of the row' (shipped STANDOUT = {STANDOUT}); "
          "columns as above, every conversation")
    for point in curves["z over the rest of the row"]:
        tune = row_of(point, "tune", names)
        out = row_of(point, "held_out", [])
        print(f"k {point.parameter:6.3f} | tune {' '.join(tune)} | held out {' '.join(out)}")
    print(f"\nembeddings: {embedder.misses} texts embedded, the rest from {embedder.path}")


if __name__ == "__main__":
    main()
