"""The ONNX graph of the bundled model, written from its weights without torch.

all-MiniLM-L6-v2 is a BERT encoder (6 layers, hidden 384, 12 heads, exact GELU) followed by
sentence-transformers' mean pooling. :func:`build_graph` writes that computation out node by
node from ``model.safetensors`` (read with ``safetensors.numpy``) and ``config.json``: inputs
``input_ids``, ``attention_mask`` and ``token_type_ids`` (int64, ``[batch, tokens]``), output
``embedding`` (float32, ``[batch, 384]``, the mean-pooled vectors *before* the L2 norm, which
``OnnxEmbedder`` applies in numpy).

The subgraphs follow the shapes ONNX Runtime's BERT fusions look for (those of the Hugging Face
export of BERT): :func:`optimize` then runs ``onnxruntime.transformers.optimizer`` to fuse them
into ``Attention`` and ``BiasGelu``. The output is byte-identical from run to run. Set-up time
only: serving loads the file and never imports ``onnx``.
"""

from __future__ import annotations

import json
import logging
import math
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
import onnx
from onnx import TensorProto, helper, numpy_helper
from safetensors.numpy import load_file

OPSET = 17  # the first with LayerNormalization; ONNX Runtime's CPU kernels all cover it
INPUTS = ("input_ids", "attention_mask", "token_type_ids")
EMBEDS = "inputs_embeds"
OUTPUT = "embedding"
# What a masked (padding) key adds to the attention scores, as transformers does.
MASK_BIAS = float(np.finfo(np.float32).min)


class _Builder:
    """Nodes and initializers of one graph; every op returns its (single) output's name."""

    def __init__(self) -> None:
        self.nodes: list[onnx.NodeProto] = []
        self.initializers: list[onnx.TensorProto] = []
        self._names: set[str] = set()
        self._count = 0

    def const(self, name: str, value: npt.ArrayLike, dtype: type = np.float32) -> str:
        """An initializer (weights and constants alike), stored as raw little-endian bytes."""
        if name in self._names:
            raise ValueError(f"duplicate initializer {name}")
        self._names.add(name)
        # (not np.ascontiguousarray: it turns a 0-d scalar into shape [1])
        array: npt.NDArray[Any] = np.array(value, dtype=dtype, order="C")
        self.initializers.append(numpy_helper.from_array(array, name))
        return name

    def op(self, op_type: str, *inputs: str, **attrs: Any) -> str:
        self._count += 1
        out = f"{op_type.lower()}_{self._count}"
        self.nodes.append(helper.make_node(op_type, list(inputs), [out],
                                           name=f"{op_type}_{self._count}", **attrs))
        return out


def _config(model_dir: Path) -> dict[str, Any]:
    """``config.json``, checked to be the architecture this builder writes."""
    config: dict[str, Any] = json.loads((model_dir / "config.json").read_text())
    pooling = json.loads((model_dir / "1_Pooling" / "config.json").read_text())
    expected = {"model_type": "bert", "hidden_act": "gelu", "position_embedding_type": "absolute"}
    for key, value in expected.items():
        if config.get(key, value) != value:
            raise ValueError(f"config.json has {key}={config[key]!r}; only {value!r} is built")
    modes = [k for k, v in pooling.items() if k.startswith("pooling_mode") and v]
    if modes != ["pooling_mode_mean_tokens"]:
        raise ValueError(f"1_Pooling/config.json selects {modes}; only mean pooling is built")
    return config


def build_graph(model_dir: Path) -> onnx.ModelProto:
    """BERT + mean pooling of the model in ``model_dir`` as an opset-17 ONNX model."""
    config = _config(model_dir)
    w = load_file(str(model_dir / "model.safetensors"))
    if any(k.startswith("bert.") for k in w):
        w = {k.removeprefix("bert."): v for k, v in w.items()}
    return build_bert(w, config, "all-MiniLM-L6-v2")


def build_bert(w: dict[str, npt.NDArray[np.float32]], config: dict[str, Any], name: str, *,
               word_input: bool = False) -> onnx.ModelProto:
    """BERT + mean pooling from weights under Hugging Face's names, as an opset-17 model.

    ``word_input``: the graph takes the word embeddings already looked up (``inputs_embeds``,
    float32 ``[batch, tokens, hidden]``, with ``attention_mask``) in place of ``input_ids``
    and ``token_type_ids``, every token of type 0: a 250k-row word table then stays out of the
    file (the e5 encoder gathers its rows from the 4-bit weights in numpy).
    """
    hidden, heads = int(config["hidden_size"]), int(config["num_attention_heads"])
    head_size, eps = hidden // heads, float(config["layer_norm_eps"])
    g = _Builder()
    ids, mask, types = INPUTS
    inputs: list[tuple[str, int, list[str | int]]] = [
        (EMBEDS, TensorProto.FLOAT, ["batch", "tokens", hidden]),
        (mask, TensorProto.INT64, ["batch", "tokens"])] if word_input else \
        [(n, TensorProto.INT64, ["batch", "tokens"]) for n in INPUTS]

    def linear(x: str, prefix: str) -> str:  # x @ W.T + b, W stored transposed for MatMul
        weight = g.const(f"{prefix}.weight_t", w[f"{prefix}.weight"].T)
        bias = g.const(f"{prefix}.bias", w[f"{prefix}.bias"])
        return g.op("Add", g.op("MatMul", x, weight), bias)

    def layer_norm(x: str, prefix: str) -> str:
        return g.op("LayerNormalization", x, g.const(f"{prefix}.weight", w[f"{prefix}.weight"]),
                    g.const(f"{prefix}.bias", w[f"{prefix}.bias"]), axis=-1, epsilon=eps)

    # Embeddings: word + token type + position (positions 0..tokens-1, sliced from a table).
    axes0, axes1, zero, one = (g.const(n, [v], np.int64)
                               for n, v in (("axes_0", 0), ("axes_1", 1), ("zero", 0), ("one", 1)))
    tokens = g.op("Unsqueeze", g.op("Gather", g.op("Shape", EMBEDS if word_input else ids),
                                    g.const("index_1", 1, np.int64), axis=0), axes0)
    table = np.arange(int(config["max_position_embeddings"]), dtype=np.int64)[None, :]
    positions = g.op("Slice", g.const("position_ids", table, np.int64), zero, tokens, axes1, one)

    def lookup(table: str, indices: str) -> str:
        weight = f"embeddings.{table}_embeddings.weight"
        return g.op("Gather", g.const(weight, w[weight]), indices)

    if word_input:  # word + (position + type 0), the sum in e5.c's order
        table_w = (w["embeddings.position_embeddings.weight"]
                   + w["embeddings.token_type_embeddings.weight"][0])
        placed = g.op("Gather", g.const("position_type", table_w), positions)
        x = layer_norm(g.op("Add", EMBEDS, placed), "embeddings.LayerNorm")
    else:
        summed = g.op("Add", lookup("word", ids), lookup("token_type", types))
        x = layer_norm(g.op("Add", summed, lookup("position", positions)),
                       "embeddings.LayerNorm")

    # The attention mask as an additive bias on the scores: 0 for tokens, MASK_BIAS for padding,
    # shape [batch, 1, 1, tokens].
    keep = g.op("Cast", g.op("Unsqueeze", g.op("Unsqueeze", mask, axes1),
                             g.const("axes_2", [2], np.int64)), to=TensorProto.FLOAT)
    one_f = g.const("one_f", 1.0)
    bias = g.op("Mul", g.op("Sub", one_f, keep), g.const("mask_bias", MASK_BIAS))
    split = g.const("shape_heads", [0, 0, heads, head_size], np.int64)
    merge = g.const("shape_hidden", [0, 0, hidden], np.int64)
    scale = g.const("sqrt_head_size", math.sqrt(head_size))
    sqrt2, half = g.const("sqrt_2", math.sqrt(2.0)), g.const("half", 0.5)

    def heads_of(x: str, prefix: str, perm: list[int]) -> str:  # [batch, heads, ., .]
        return g.op("Transpose", g.op("Reshape", linear(x, prefix), split), perm=perm)

    for i in range(int(config["num_hidden_layers"])):
        p = f"encoder.layer.{i}"
        q = heads_of(x, f"{p}.attention.self.query", [0, 2, 1, 3])  # [.., tokens, head_size]
        k = heads_of(x, f"{p}.attention.self.key", [0, 2, 3, 1])    # [.., head_size, tokens]
        v = heads_of(x, f"{p}.attention.self.value", [0, 2, 1, 3])
        scores = g.op("Add", g.op("Div", g.op("MatMul", q, k), scale), bias)
        context = g.op("MatMul", g.op("Softmax", scores, axis=-1), v)
        context = g.op("Reshape", g.op("Transpose", context, perm=[0, 2, 1, 3]), merge)
        x = layer_norm(g.op("Add", linear(context, f"{p}.attention.output.dense"), x),
                       f"{p}.attention.output.LayerNorm")
        h = linear(x, f"{p}.intermediate.dense")   # exact GELU: x/2 * (1 + erf(x / sqrt 2))
        h = g.op("Mul", g.op("Mul", h, g.op("Add", g.op("Erf", g.op("Div", h, sqrt2)), one_f)),
                 half)
        x = layer_norm(g.op("Add", linear(h, f"{p}.output.dense"), x), f"{p}.output.LayerNorm")

    # Mean pooling as sentence-transformers does it: sum(hidden * mask) / max(sum(mask), 1e-9).
    weights = g.op("Cast", g.op("Unsqueeze", mask, g.const("axes_last", [-1], np.int64)),
                   to=TensorProto.FLOAT)
    total = g.op("ReduceSum", g.op("Mul", x, weights), axes1, keepdims=0)
    count = g.op("Clip", g.op("ReduceSum", weights, axes1, keepdims=0), g.const("min_count", 1e-9))
    g.nodes.append(helper.make_node("Div", [total, count], [OUTPUT], name="mean_pooling"))

    graph = helper.make_graph(
        g.nodes, name,
        [helper.make_tensor_value_info(n, t, shape) for n, t, shape in inputs],
        [helper.make_tensor_value_info(OUTPUT, TensorProto.FLOAT, ["batch", hidden])],
        g.initializers,
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)],
                              producer_name="semmem-onnx-graph", ir_version=8)
    onnx.checker.check_model(model)
    return model


def optimize(model: onnx.ModelProto, target: Path, *, fuse_layer_norms: bool = False,
             mask_index: bool = False, shape_inference: bool = False) -> dict[str, int]:
    """Fuse a copy of ``model`` with ONNX Runtime's BERT optimizer and save it at ``target``.

    Always fused: each layer's attention into one ``Attention`` node (Q, K and V in one MatMul),
    and the FFN's bias + GELU into ``BiasGelu``. ``fuse_layer_norms`` also fuses the embeddings
    into ``EmbedLayerNormalization`` and each residual Add + LayerNorm into
    ``SkipLayerNormalization``: off by default, as ONNX Runtime 1.31's CPU kernel for the latter
    is slower than Add + LayerNormalization here (1.2 vs 0.2 ms on [32, 13, 384]). Without the
    embedding node the sliced position ids leave the token axis's size unknown to ONNX Runtime,
    so its own SkipLayerNormFusion does not apply at load either.

    ``mask_index`` selects the optimizer's BERT default, a per-row token count in place of the
    2-D mask (right padding only); the default keeps the raw mask, valid for any mask, as the
    torch export is. ``shape_inference`` runs the optimizer's symbolic shape inference (needs
    ``sympy``); this graph fuses the same without it. Python fusions only (``opt_level=0``):
    ONNX Runtime's own graph optimizations still run when a session loads the file, and a file
    saved after them could be specific to one CPU build.

    Returns:
        The count of each fused operator.
    """
    from onnxruntime.transformers import optimizer

    options: Any = optimizer.FusionOptions("bert")
    options.use_raw_attention_mask(not mask_index)
    options.enable_shape_inference = shape_inference
    options.enable_embed_layer_norm = fuse_layer_norms
    options.enable_skip_layer_norm = fuse_layer_norms
    options.enable_bias_skip_layer_norm = fuse_layer_norms
    copy = onnx.ModelProto()
    copy.CopyFrom(model)  # the optimizer rewrites the graph it is given in place
    # Quiet two warnings that do not apply: the producer is not "pytorch", and (without shape
    # inference) SkipLayerNormalization fusion "disabled or failed", which it does not.
    logs = [logging.getLogger(n) for n in (optimizer.__name__, "fusion_skiplayernorm")]
    levels = [log.level for log in logs]
    for log in logs:
        log.setLevel(logging.ERROR)
    try:
        fused: Any = optimizer.optimize_model(copy, model_type="bert", opt_level=0,
                                              optimization_options=options)
    finally:
        for log, level in zip(logs, levels, strict=True):
            log.setLevel(level)
    fused.save_model_to_file(str(target))
    counts: dict[str, int] = fused.get_fused_operator_statistics()
    return {op: n for op, n in counts.items() if n}
