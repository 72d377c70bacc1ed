"""What an int8 copy of the ONNX model would cost and gain (not shipped; measured only).

    .venv/bin/python -m benchmarks int8_eval --dataset ../shared/data/locomo-dev

Quantises the verified ``model.onnx`` with onnxruntime's dynamic int8 quantisation (weights
int8, activations quantised per call) into a temp folder, then, in one run:

- its vectors against the fp32 file's on the LoCoMo dev texts (lowest and median cosine);
- gold recall within each budget on the LoCoMo dev split with the default ranking, fp32 ONNX
  vs int8 (in memory, the same harness ``semmem eval`` uses); its vectors differ, so it would
  need its own model id and a reindex;
- speed, interleaved: one query per call (p50 ms), 32 queries per call and 64 facts per call
  (texts/s), one intra-op thread.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

import numpy as np

from benchmarks.data_sets import LOCOMO
from benchmarks.factgen import facts
from benchmarks.harness import pct, queries
from semmem.embedding.files import check_onnx, default_model_dir, verify
from semmem.embedding.onnx import OnnxEmbedder
from semmem.evaluation import Evaluation, load_dataset
from semmem.ranking.ranker import RankingConfig
from semmem.wiring import limit_blas_threads


def main() -> None:
    limit_blas_threads()
    parser = argparse.ArgumentParser()
    parser.add_argument("--dataset", type=Path, default=None, help="LoCoMo (else $SEMMEM_LOCOMO)")
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    from onnxruntime.quantization import QuantType, quantize_dynamic

    spec = verify(default_model_dir())
    fp32_file = check_onnx(spec)
    with tempfile.TemporaryDirectory() as tmp:
        int8_file = Path(tmp) / "model-int8.onnx"
        import onnx

        # the graph is written fused (embedding/graph.py): its fused nodes' outputs have no
        # inferred type, so the quantizer is told they are float
        quantize_dynamic(str(fp32_file), str(int8_file), weight_type=QuantType.QInt8,
                         extra_options={"DefaultTensorType": onnx.TensorProto.FLOAT})
        fp32 = OnnxEmbedder(spec, fp32_file)
        int8 = OnnxEmbedder(spec, int8_file)
        int8.model_id = spec.model_id + "+int8"  # other vectors: never the same id
        print(f"files: fp32 {fp32_file.stat().st_size / 1e6:.1f} MB, "
              f"int8 {int8_file.stat().st_size / 1e6:.1f} MB")

        labelled = load_dataset(LOCOMO.path(args.dataset))
        config = RankingConfig()
        summaries = {}
        vectors = {}
        for name, model in (("onnx fp32", fp32), ("onnx int8", int8)):
            ev = Evaluation(labelled, model)
            summaries[name] = ev.summary(config)
            vectors[name] = np.vstack([p.vectors for p in ev.parts])
        cos = np.einsum("ij,ij->i", vectors["onnx fp32"], vectors["onnx int8"])
        print(f"int8 vs fp32 vectors on {len(cos)} LoCoMo facts: lowest cosine "
              f"{cos.min():.4f}, median {np.median(cos):.4f}")
        budgets = sorted(summaries["onnx fp32"].budgets)
        print("\n| gold recall within budget (%) | " + " | ".join(map(str, budgets)) + " |")
        print("| --- |" + " --- |" * len(budgets))
        for name, s in summaries.items():
            print(f"| {name} | " + " | ".join(f"{100 * s.gold_recall(b):.1f}" for b in budgets)
                  + " |")
        lost = [summaries["onnx int8"].gold_recall(b) - summaries["onnx fp32"].gold_recall(b)
                for b in budgets]
        print("| int8 − fp32 (points) | " + " | ".join(f"{100 * d:+.1f}" for d in lost) + " |")

        figures: dict[str, dict[str, list[float]]] = {"onnx fp32": {}, "onnx int8": {}}
        docs = facts(64 * args.rounds * 2, seed=9)
        offset = 0
        for r in range(args.rounds):
            for i, (name, model) in enumerate((("onnx fp32", fp32), ("onnx int8", int8))):
                f = figures[name]
                for q in queries(30, offset=offset):
                    t0 = time.perf_counter()
                    model.embed_batch([q])
                    f.setdefault("query p50 ms", []).append((time.perf_counter() - t0) * 1000)
                offset += 30
                batch = queries(32, offset=offset)
                offset += 32
                t0 = time.perf_counter()
                model.embed_batch(batch)
                f.setdefault("32 queries, texts/s", []).append(32 / (time.perf_counter() - t0))
                chunk = docs[64 * (2 * r + i):][:64]
                t0 = time.perf_counter()
                model.embed_batch(chunk)
                f.setdefault("64 facts, texts/s", []).append(64 / (time.perf_counter() - t0))
        print("\n| speed (median of rounds) | onnx fp32 | onnx int8 | int8 / fp32 |")
        print("| --- | --- | --- | --- |")
        for key in figures["onnx fp32"]:
            a, b = pct(figures["onnx fp32"][key], .5), pct(figures["onnx int8"][key], .5)
            print(f"| {key} | {a:.1f} | {b:.1f} | {b / a:.2f}× |")


if __name__ == "__main__":
    main()
