"""The ONNX encoder: torch's vectors, trusted only by its probe record, and stores stay valid.

These compare with torch, the reference extra (``make test`` installs it); test_graph.py checks
the same file against the committed reference vectors with torch blocked."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import numpy as np
import pytest

from semmem.embedding.choice import open_model
from semmem.embedding.files import (
    ONNX_NAME,
    PROBE_MIN_COSINE,
    PROBE_NAME,
    check_onnx,
    default_model_dir,
    load_spec,
    resolve_encoder,
)
from semmem.embedding.reference import SentenceTransformerEmbedder
from semmem.errors import ModelError
from tests.support.memory import open_memory

pytestmark = pytest.mark.model

FACTS = [
    "Prefers metric units",
    "Is vegetarian since 2019",
    "Lives in Lyon with two cats",
    "Alice's cat is called Miso and is afraid of the vacuum cleaner.",
    "The team deploys every Thursday at 16:00 UTC after the integration suite passes.",
    "Allergic to peanuts; carries an EpiPen.",
    "Plays the cello in an amateur orchestra on Sunday mornings.",
    "Her brother Tom works as a nurse in Glasgow.",
    "Wants the weekly report as a PDF, never as a spreadsheet.",
    "Runs a half marathon every October.",
]
QUERIES = ["Suggest a recipe, I do not eat meat", "which units do I prefer?", "pets",
           "when do we ship?", "family members", "hobbies on weekends"]


@pytest.fixture(scope="session")
def onnx_ready() -> None:
    """Skips where set-up has not exported the bundled model's ONNX file (`make setup` does)."""
    if not (default_model_dir() / PROBE_NAME).is_file():
        pytest.skip("no verified ONNX file (run `semmem model fetch`)")


@pytest.fixture(scope="session")
def onnx_embedder(onnx_ready: None) -> object:
    from semmem.embedding.onnx import OnnxEmbedder

    return OnnxEmbedder.load(default_model_dir())


def _linked_model(tmp_path: Path, *, onnx: bool = True) -> Path:
    """A copy of the bundled model folder (hard links where possible), its manifest and its
    reference vectors."""
    src = default_model_dir()
    dst = tmp_path / "models" / src.name
    skip = set() if onnx else {ONNX_NAME, PROBE_NAME}

    def link(a: str, b: str) -> None:
        try:
            os.link(a, b)
        except OSError:
            shutil.copy2(a, b)

    shutil.copytree(src, dst, copy_function=link,
                    ignore=lambda _d, names: [n for n in names if n in skip or n == ".verified"])
    for name in ("manifest.json", "probe-reference.json"):
        shutil.copy(src.parent / name, dst.parent / name)
    return dst


def _replace(path: Path, data: bytes) -> None:
    """Write a new file in place of ``path`` (never through a hard link to the original)."""
    path.unlink()
    path.write_bytes(data)


def test_onnx_vectors_equal_torch_one_by_one_and_batched(
    onnx_embedder: object, real_embedder: SentenceTransformerEmbedder
) -> None:
    from semmem.embedding.export import PROBES
    from semmem.embedding.onnx import OnnxEmbedder

    assert isinstance(onnx_embedder, OnnxEmbedder)
    texts = [*FACTS, *QUERIES, *PROBES]
    batched = onnx_embedder.embed_batch(texts)  # sorted by length inside, padded per batch
    single = np.vstack([onnx_embedder.embed_batch([t]) for t in texts])
    torch_vecs = real_embedder.embed_batch(texts)
    assert batched.shape == (len(texts), 384) and batched.dtype == np.float32
    assert np.allclose(np.linalg.norm(batched, axis=1), 1.0, atol=1e-5)
    assert float(np.einsum("ij,ij->i", batched, torch_vecs).min()) >= PROBE_MIN_COSINE
    assert float(np.einsum("ij,ij->i", single, torch_vecs).min()) >= PROBE_MIN_COSINE
    assert onnx_embedder.model_id == real_embedder.model_id
    assert onnx_embedder.embed_batch([]).shape == (0, 384)


def test_onnx_truncates_at_the_models_limit_not_tokenizer_json(onnx_embedder: object) -> None:
    from semmem.embedding.onnx import OnnxEmbedder

    assert isinstance(onnx_embedder, OnnxEmbedder)
    # tokenizer.json cuts at 128 tokens, the model at 256: words past 128 must still count
    head = " ".join(f"w{i}" for i in range(70))
    a, b = onnx_embedder.embed_batch([head + " apples bananas", head + " trains stations"])
    assert float(a @ b) < 0.999
    long = "memory " * 400
    same = onnx_embedder.embed_batch([long, long + "tail words past the limit"])
    assert float(same[0] @ same[1]) > 0.99999


class _Counting:
    """The model's tokenizer, noting the length of every text it is given."""

    def __init__(self, inner: object) -> None:
        self.inner, self.seen = inner, []  # type: list[int]

    def encode(self, text: str) -> object:
        self.seen.append(len(text))
        return self.inner.encode(text)  # type: ignore[attr-defined]

    def encode_batch(self, texts: list[str]) -> list[object]:
        self.seen.extend(len(t) for t in texts)
        return self.inner.encode_batch(texts)  # type: ignore[attr-defined,no-any-return]


def test_onnx_tokenises_a_long_text_by_its_head_with_the_whole_texts_tokens(
        onnx_embedder: object) -> None:
    from semmem.embedding.onnx import HEAD_CHARS, OnnxEmbedder, head_encoding

    assert isinstance(onnx_embedder, OnnxEmbedder)
    whole = onnx_embedder._tokenizer  # the tokenizer as loaded: the yardstick
    rng = np.random.default_rng(7)
    words = ["memory", "naïve", "café", "東京", "x" * 150, "e\u0301", "don't", "3.14", "—", ""]
    texts = [" ".join(rng.choice(words, size=int(n))) for n in (900, 3000, 20000)]
    texts += ["a" + " " * 9000 + "b c", "\n".join(FACTS * 400), "東京" * 5000,
              "word\t" * 3000, "memory " * 600_000]  # the last: 4.2 MB
    for text in texts:
        counting = _Counting(whole)
        enc = head_encoding(counting, text)
        assert enc.ids == whole.encode(text).ids  # type: ignore[attr-defined]
        if len(text) > 100_000:  # the head, never the text, went to the tokenizer
            assert max(counting.seen) <= 2 * HEAD_CHARS
    # the embedder takes that way: a 4 MB text embeds as its first 256 tokens
    big = "memory " * 600_000
    a, b = onnx_embedder.embed_batch([big, "memory " * 300])
    assert float(a @ b) > 0.99999


async def test_store_written_with_torch_recalls_the_same_with_onnx(
    tmp_path: Path, onnx_embedder: object, real_embedder: SentenceTransformerEmbedder
) -> None:
    from semmem.embedding.onnx import OnnxEmbedder

    assert isinstance(onnx_embedder, OnnxEmbedder)
    written = await open_memory(tmp_path / "store", real_embedder)
    for fact in FACTS:
        await written.remember("alice", fact)
    by_torch = [(await written.recall("alice", q, 300)).wire() for q in QUERIES]
    torch_search = [await written.search("alice", q, 5) for q in QUERIES]
    await written.close()

    # the model check passes on opening: same model id, same vectors
    memory = await open_memory(tmp_path / "store", onnx_embedder)
    try:
        for q, expected, searched in zip(QUERIES, by_torch, torch_search, strict=True):
            got = (await memory.recall("alice", q, 300)).wire()
            assert got == expected, q
            found = await memory.search("alice", q, 5)
            assert [i["n"] for i in found["items"]] == [i["n"] for i in searched["items"]]
            for mine, theirs in zip(found["items"], searched["items"], strict=True):
                assert abs(mine["score"] - theirs["score"]) <= 2e-4
        assert any(by_torch[0]["sources"])  # the recalls compared are not empty
    finally:
        await memory.close()


def test_auto_is_onnx_with_a_record_and_torch_without(tmp_path: Path, onnx_ready: None) -> None:
    with_onnx = _linked_model(tmp_path / "a")
    without = _linked_model(tmp_path / "b", onnx=False)
    assert resolve_encoder(with_onnx) == "onnx"
    assert resolve_encoder(without) == "torch"
    assert resolve_encoder(with_onnx, "torch") == "torch"
    assert getattr(open_model(with_onnx), "encoder", None) == "onnx"
    assert getattr(open_model(without), "encoder", None) == "torch"
    with pytest.raises(ModelError, match="no verified ONNX file"):
        open_model(without, "onnx")
    with pytest.raises(ModelError, match="unknown encoder"):
        resolve_encoder(with_onnx, "tensorflow")


def test_altered_onnx_file_is_refused(tmp_path: Path, onnx_ready: None) -> None:
    folder = _linked_model(tmp_path)
    onnx = folder / ONNX_NAME
    _replace(onnx, onnx.read_bytes() + b"\0")
    with pytest.raises(ModelError, match="not the file its probe verified"):
        open_model(folder)  # auto: the record says ONNX, so an altered file stops the start


def test_probe_record_of_another_model_or_a_failed_probe_is_refused(
    tmp_path: Path, onnx_ready: None
) -> None:
    folder = _linked_model(tmp_path)
    record_path = folder / PROBE_NAME
    record = json.loads(record_path.read_text())
    _replace(record_path, json.dumps({**record, "model_id": "other@123"}).encode())
    with pytest.raises(ModelError, match="is for model other@123"):
        check_onnx(load_spec(folder))
    _replace(record_path, json.dumps({**record, "min_cosine": 0.999}).encode())
    with pytest.raises(ModelError, match="failed its probe"):
        check_onnx(load_spec(folder))
    _replace(record_path, b"{not json")
    with pytest.raises(ModelError, match="unreadable"):
        check_onnx(load_spec(folder))


@pytest.mark.slow
def test_install_refuses_a_graph_whose_vectors_differ(tmp_path: Path, onnx_ready: None) -> None:
    import onnx
    from onnx import numpy_helper

    from semmem.embedding.export import install_onnx

    folder = _linked_model(tmp_path, onnx=False)
    graph = onnx.load(str(default_model_dir() / ONNX_NAME))
    # Nudge one attention weight matrix: a plausible, subtly wrong export
    target = next(t for t in graph.graph.initializer if len(t.dims) == 2 and t.dims[0] == 384)
    weights = numpy_helper.to_array(target).copy()
    weights += np.random.default_rng(0).normal(0, 0.02, weights.shape).astype(weights.dtype)
    target.CopyFrom(numpy_helper.from_array(weights, target.name))
    candidate = tmp_path / "nudged.onnx"
    onnx.save(graph, str(candidate))
    with pytest.raises(ModelError, match="differs from the reference"):
        install_onnx(folder, candidate)
    assert not (folder / ONNX_NAME).exists() and not (folder / PROBE_NAME).exists()
    assert resolve_encoder(folder) == "torch"


@pytest.mark.slow
def test_build_makes_the_file_from_the_pinned_weights_and_keeps_a_verified_one(
    tmp_path: Path
) -> None:
    from semmem.embedding.export import PROBES, build_onnx

    folder = _linked_model(tmp_path, onnx=False)
    record = build_onnx(folder)
    assert record["model_id"] == load_spec(folder).model_id
    assert record["min_cosine"] >= PROBE_MIN_COSINE
    assert record["probe"]["texts"] == len(PROBES)
    assert len(record["probe"]["cosine_single"]) == len(PROBES)
    assert check_onnx(load_spec(folder)) == folder / ONNX_NAME
    assert json.loads((folder / PROBE_NAME).read_text()) == record
    mtime = (folder / ONNX_NAME).stat().st_mtime_ns
    assert build_onnx(folder) == record  # verified already: left alone
    assert (folder / ONNX_NAME).stat().st_mtime_ns == mtime
    assert not list(folder.glob(".*tmp*")) and not list(folder.glob("*.tmp"))


@pytest.mark.parametrize("encoder", ["torch", "onnx"])
def test_settings_encoder_selects_the_runtime_encoder(
    encoder: str, onnx_embedder: object, monkeypatch: pytest.MonkeyPatch
) -> None:
    from semmem.settings import Settings
    from semmem.wiring import load_embedder

    monkeypatch.setenv("SEMMEM_ENCODER", encoder)
    embedder = load_embedder(Settings())
    assert getattr(embedder, "encoder", None) == encoder
    assert embedder.model_id == load_spec(default_model_dir()).model_id


def test_cli_model_verify_probes_against_the_reference_and_torch_again(
    onnx_embedder: object
) -> None:
    from typer.testing import CliRunner

    from semmem.cli.commands import app

    result = CliRunner().invoke(app, ["model", "verify", "--probe"])
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    assert lines[0].startswith("model all-MiniLM-L6-v2 OK")
    assert lines[1] == "ONNX file model.onnx OK (the file its probe verified)"
    assert lines[2].startswith("probe again: lowest cosine to the reference vectors ")
    assert lines[3].startswith("probe again: lowest cosine to torch ")
    assert min(float(line.rsplit(" ", 1)[1]) for line in lines[2:4]) >= PROBE_MIN_COSINE


def test_cli_model_fetch_keeps_a_verified_onnx_file(tmp_path: Path, onnx_ready: None) -> None:
    from typer.testing import CliRunner

    from semmem.cli.commands import app

    folder = _linked_model(tmp_path)
    before = (folder / PROBE_NAME).read_text()
    result = CliRunner().invoke(app, ["model", "fetch", "--model", str(folder)])
    assert result.exit_code == 0, result.output
    assert "ONNX file verified by its outputs: 29 probes" in result.stdout
    assert (folder / PROBE_NAME).read_text() == before


def test_onnx_encoder_never_imports_torch(onnx_ready: None) -> None:
    import subprocess
    import sys

    code = ("import json, sys\n"
            "from semmem.wiring import load_embedder\n"
            "from semmem.settings import Settings\n"
            "e = load_embedder(Settings(encoder='onnx'))\n"
            "e.embed_batch(['hello'])\n"
            "print(json.dumps([m for m in ('torch', 'sentence_transformers', 'transformers')"
            " if m in sys.modules]))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True, timeout=120)
    assert json.loads(out.stdout) == []
