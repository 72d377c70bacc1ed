"""Ranking study on a labelled set: the figures behind docs/ranking.md.

    .venv/bin/python -m benchmarks eval_locomo --dataset LOCOMO_DIR  # or $SEMMEM_LOCOMO

Prints, for the default ranking: the comparison against plain cosine and number order, an
ablation (each component switched off), the relevance-floor trade-off (gold recall against
bytes spent on noise and on off-topic probes), and a leave-one-partition-out check of the
knob choice. Runs in memory (the ``semmem eval`` command checks the store path agrees).
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

from benchmarks.data_sets import LOCOMO
from semmem.evaluation import Evaluation, Outcome, Summary, summarise
from semmem.evaluation.tuning import grid, leave_one_out, objective, pooled
from semmem.ranking.ranker import RankingConfig


def _gold(s: Summary, budgets: tuple[int, ...]) -> str:
    return " ".join(f"{100 * s.gold_recall(b):6.1f}" for b in budgets)


def _noise(s: Summary, budgets: tuple[int, ...]) -> str:
    return " ".join(f"{s.budgets[b].noise_bytes:6.0f}" for b in budgets)


def _offtopic(s: Summary, budgets: tuple[int, ...]) -> str:
    return " ".join(f"{s.offtopic_bytes[b]:6.0f}" for b in budgets)


def main() -> None:
    """Run every study and print it."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dataset", type=Path, default=None)
    parser.add_argument("--model", type=Path, default=None)
    parser.add_argument("--no-loo", action="store_true", help="skip leave-one-out")
    parser.add_argument("--quick", action="store_true",
                        help="the defaults and plain cosine only (a smoke run)")
    args = parser.parse_args()

    started = time.monotonic()
    dataset = LOCOMO.path(args.dataset)
    ev = Evaluation.load(dataset, args.model)
    budgets = ev.budgets
    head = " ".join(f"{b:>6}" for b in budgets)
    default = RankingConfig()
    cosine = RankingConfig.plain_cosine()

    print(f"## {dataset.name}: gold recall (%) | bytes on non-relevant facts | "
          "off-topic bytes, per budget")
    print(f"{'setting':34} {head} | {head} | {head}")

    def line(name: str, config: RankingConfig) -> Summary:
        s = ev.summary(config)
        print(f"{name:34} {_gold(s, budgets)} | {_noise(s, budgets)} | {_offtopic(s, budgets)}")
        return s

    line("semmem defaults", default)
    line("plain cosine", cosine)
    if args.quick:
        return
    print("\n## ablation: defaults with one component off")
    line("no lexical (lexical_weight=0)", default.model_copy(update={"lexical_weight": 0.0}))
    line("no stemming", default.model_copy(update={"stemming": False}))
    line("no centring (centering=0)", default.model_copy(update={"centering": 0.0}))
    line("no floor (min_score=-1)", default.model_copy(update={"min_score": -1.0}))
    line("no dedupe (dedupe_threshold=1.01)",
         default.model_copy(update={"dedupe_threshold": 1.01}))
    line("lexical only on plain cosine", cosine.model_copy(update={"lexical_weight": 0.4}))
    line("centring only on plain cosine", cosine.model_copy(update={"centering": 1.0}))

    print("\n## relevance floor (min_score on the plain cosine)")
    for floor in (-1.0, 0.0, 0.05, 0.1, 0.15, 0.2, 0.25, 0.3):
        line(f"min_score={floor}", default.model_copy(update={"min_score": floor}))
    for gap in (0.2, 0.3, 0.4):
        line(f"relative_floor={gap}", default.model_copy(update={"relative_floor": gap}))

    print("\n## other knobs")
    for weight in (0.2, 0.3, 0.5, 0.6):
        line(f"lexical_weight={weight}", default.model_copy(update={"lexical_weight": weight}))
    for share in (0.5, 0.8):
        line(f"centering={share}", default.model_copy(update={"centering": share}))
    for weight in (0.02, 0.05, 0.1):
        line(f"recency_weight={weight}", default.model_copy(update={"recency_weight": weight}))
    for threshold in (0.9, 0.85):
        line(f"dedupe_threshold={threshold}",
             default.model_copy(update={"dedupe_threshold": threshold}))

    if not args.no_loo and len(ev.partition_names) > 2:
        configs = grid(default, {
            "lexical_weight": [0.0, 0.2, 0.4, 0.6],
            "centering": [0.0, 0.5, 1.0],
            "stemming": [False, True],
        })
        print(f"\n## leave-one-partition-out: best of {len(configs)} settings on the others, "
              "scored on the held-out partition (gold recall %)")
        print(f"{'held out':10} {'chosen (vs defaults)':44} {'tuned':>20} | {'defaults':>20} | "
              f"{'plain cosine':>20}")
        sub = [b for b in budgets if b <= 2048]
        folds = leave_one_out(ev, configs, default)
        for fold in folds:
            chosen = ", ".join(f"{k}={v}" for k, v in fold.chosen.items()) or "(the defaults)"
            print(f"{fold.held_out:10} {chosen:44} {_gold(fold.tuned, tuple(sub)):>20} | "
                  f"{_gold(fold.default, tuple(sub)):>20} | {_gold(fold.cosine, tuple(sub)):>20}")
        all_budgets = tuple(budgets)
        print(f"{'pooled':10} {'(each query scored by its own fold)':44} "
              f"{_gold(pooled(folds, all_budgets), tuple(sub)):>20} | "
              f"{_gold(ev.summary(default), tuple(sub)):>20} | "
              f"{_gold(ev.summary(cosine), tuple(sub)):>20}")
        print(f"(budgets {sub}; objective = mean gold recall over them; "
              f"defaults overall {100 * objective(ev.summary(default)):.1f})")
    if not args.no_loo and len(ev.partition_names) > 2:
        round_two(ev)
    print(f"\n({time.monotonic() - started:.0f} s)")


def _per_partition(ev: Evaluation, outcomes: list[Outcome], label: str) -> None:
    budgets = ev.budgets
    for name in ["pooled", *ev.partition_names]:
        part = outcomes if name == "pooled" else [o for o in outcomes if o.partition == name]
        s = summarise(part, budgets)
        facts = " ".join(f"{s.budgets[b].relevant_facts:6.2f}" for b in budgets)
        print(f"{label:22} {name:7} {_gold(s, budgets)} | {facts} | {_noise(s, budgets)} | "
              f"{_offtopic(s, budgets)} | "
              + " ".join(f"{100 * s.offtopic_any[b]:5.1f}" for b in budgets))


def round_two(ev: Evaluation) -> None:
    """Before/after of the second ranking round, and each direction checked by leave-one-out."""
    budgets = ev.budgets
    before = RankingConfig(time_weight=0.0)  # the defaults before the time cue
    after = RankingConfig()
    head = " ".join(f"{b:>6}" for b in budgets)
    print("\n## round two: gold recall (%) | relevant facts returned | bytes on non-relevant "
          "facts | off-topic bytes | off-topic share recalling anything (%)")
    print(f"{'setting':22} {'part':7} {head} | {head} | {head} | {head} | {head}")
    _per_partition(ev, ev.outcomes(before), "before (time off)")
    _per_partition(ev, ev.outcomes(after), "after (defaults)")
    studies = {
        "time_weight (gate 0.4)": grid(before, {"time_weight": [0.0, 0.1, 0.15, 0.2, 0.3]}),
        "time_weight x gate": grid(before, {"time_weight": [0.0, 0.1, 0.15, 0.2, 0.3],
                                            "time_min_cosine": [0.3, 0.4, 0.5]}),
        "packing (fitted in fold)": grid(after, {"packing": ["rank", "expected"]}),
        "packing x choose_among": grid(after, {"packing": ["rank", "expected"],
                                               "pack_choose_among": [5, 10, 20]}),
    }
    for label, configs in studies.items():
        folds = leave_one_out(ev, configs, before)
        chosen = "; ".join(f"{f.held_out}: " + (", ".join(f"{k}={v}" for k, v in f.chosen.items()
                                                         if k != "relevance_model") or "-")
                           for f in folds)
        print(f"\n## leave-one-out, {label} (chosen on the other four: {chosen})")
        _per_partition(ev, [o for f in folds for o in f.outcomes], "held out")


if __name__ == "__main__":
    main()
