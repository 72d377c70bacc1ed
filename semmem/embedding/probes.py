"""The probe set that vouches for an ONNX file, and the committed reference vectors it is
checked against.

``models/probe-reference.json`` (beside ``manifest.json``) holds what the reference encoder,
sentence-transformers on torch, returns for each of :data:`PROBES` embedded on its own, from
the pinned weights: ``semmem model reference`` wrote it (it needs ``semmem[reference]``).
Set-up compares a new ONNX file with these vectors, so verifying the file needs no torch.
"""

from __future__ import annotations

import base64
import hashlib
import json
from pathlib import Path
from typing import Any

import numpy as np

from semmem.embedding.files import ModelSpec
from semmem.errors import ModelError
from semmem.items import Vectors

REFERENCE_NAME = "probe-reference.json"
FORMAT = "semmem-probe-reference/1"

# What the probe covers: short queries, typical facts, the empty and blank text, whitespace
# sentence-transformers strips, accents, emoji, CJK, digits, code and URLs, and texts past
# tokenizer.json's own 128-token cut and past the model's 256-token limit.
PROBES: tuple[str, ...] = (
    "",
    "   ",
    "hi",
    "x",
    "which units do I prefer?",
    "Prefers metric units",
    "  Lives in Lyon with two cats  ",
    "\tTabs\nand newlines\r\n",
    "Is vegetarian since 2019",
    "What did we decide about the deployment schedule last Tuesday?",
    "The team deploys every Thursday at 16:00 UTC after the integration suite passes.",
    "Alice's cat is called Miso and is afraid of the vacuum cleaner.",
    "Émile a mangé trois crêpes à la fraise 🍓 à 12 h 30.",
    "東京に住んでいて、毎朝コーヒーを飲みます。",
    "Мой любимый цвет — зелёный.",
    "Allergic to peanuts; carries an EpiPen (2 × 0.3 mg).",
    "Phone: +44 20 7946 0958, postcode SW1A 1AA",
    "def f(x): return x ** 2  # squares its input",
    "See https://example.org/docs?page=2&lang=en#install for the steps.",
    "ALL CAPS SHOUTING ABOUT THE BUDGET!!!",
    "naïve café résumé coöperate",
    "🙂🙂🙂",
    "Birthday: 1990-04-17. Favourite number: 3.14159.",
    "Asked for a recipe without meat, dairy or gluten, under 30 minutes, for four people.",
    " ".join(f"word{i}" for i in range(60)),
    " ".join(["the quick brown fox jumps over the lazy dog"] * 14),
    " ".join(["memory"] * 130),
    " ".join(["Remember that the quarterly report is due on the first Monday."] * 30),
    "a " * 600,
)

# The multilingual model's probes add the scripts and languages it is chosen for: Arabic
# (right to left), Chinese, German compounds, Hindi, Korean, Thai, Greek, Hebrew, mixed
# scripts, and a Chinese text past e5's 512 positions (the windowed path).
MULTILINGUAL: tuple[str, ...] = (
    "我昨天在北京吃了烤鸭，味道非常好。",
    "我的女儿下个月要去上海参加钢琴比赛。",
    "أحب القهوة العربية في الصباح مع قليل من الهيل.",
    "موعد طبيب الأسنان يوم الثلاثاء الساعة العاشرة.",
    "Ich wohne seit 2019 in München und fahre gern Fahrrad.",
    "Die Donaudampfschifffahrtsgesellschaftskapitänsmütze liegt im Flur.",
    "मुझे सुबह चाय पीना पसंद है।",
    "다음 주 금요일에 부산으로 출장을 갑니다.",
    "ฉันชอบกินข้าวเหนียวมะม่วง",
    "Το αγαπημένο μου νησί είναι η Νάξος.",
    "אני גר בתל אביב ליד הים.",
    "Meeting 明天 at 9:00 — bring the 報告 📄 please",
    "我每天早上六点起床，先跑步三十分钟，然后吃早饭。" * 30,
)


def probes_for(spec: ModelSpec) -> tuple[str, ...]:
    """The probe set of a model: the multilingual one adds :data:`MULTILINGUAL`."""
    return PROBES + MULTILINGUAL if spec.format == "e5-q4" else PROBES


def texts_sha256(texts: list[str] | tuple[str, ...]) -> str:
    """The hash of a probe set, as the probe record and the reference file carry it."""
    return hashlib.sha256(json.dumps(list(texts)).encode()).hexdigest()


def reference_path(spec: ModelSpec) -> Path:
    """Where the model's reference vectors live: beside the manifest."""
    return spec.root / spec.reference


def cosines(a: Vectors, b: Vectors) -> list[float]:
    """Row-wise dot products of two sets of unit vectors, in float64."""
    return [float(x) for x in np.einsum("ij,ij->i", a.astype(np.float64), b.astype(np.float64))]


def _rows(vectors: Vectors) -> list[str]:
    # one line a text: a changed vector is a changed line in a diff
    rows = np.ascontiguousarray(vectors, dtype="<f4")
    return [base64.b64encode(row.tobytes()).decode() for row in rows]


def reference_record(spec: ModelSpec, vectors: Vectors, made_with: dict[str, str], *,
                     how: str = "SentenceTransformerEmbedder(threads=1).embed_batch([text]) "
                                "for each text",
                     queries: Vectors | None = None) -> dict[str, Any]:
    """The reference file's content for ``vectors`` (one row per probe, in order), and for a
    model with query prefixes the ``queries`` vectors too (then ``vectors`` are passages')."""
    texts = probes_for(spec)
    record = {
        "format": FORMAT,
        "model_id": spec.model_id,
        "weights_sha256": spec.files.get(spec.weights),
        "made_with": made_with,
        "how": how,
        "count": int(vectors.shape[0]),
        "dim": int(vectors.shape[1]),
        "encoding": "per text, base64 of dim little-endian float32; rows L2-normalised",
        "texts_sha256": texts_sha256(texts),
        "texts": list(texts),
        "vectors": _rows(vectors),
    }
    if queries is not None:
        record["query_vectors"] = _rows(queries)
    return record


def load_reference(spec: ModelSpec, key: str = "vectors") -> Vectors:
    """The reference vectors of the model's probes (``key``: ``query_vectors`` for the
    query side of a model with prefixes) for the model of ``spec``.

    Raises:
        ModelError: no reference file, or one for another model or another probe set.
    """
    path = reference_path(spec)
    if not path.is_file():
        raise ModelError(f"no probe reference vectors at {path}: it comes with the manifest")
    try:
        record = json.loads(path.read_text())
        texts = probes_for(spec)
        ok = record["format"] == FORMAT and record["texts_sha256"] == texts_sha256(texts)
        vectors = np.vstack([np.frombuffer(base64.b64decode(row), dtype="<f4")
                             for row in record[key]]).astype(np.float32)
        model_id = record["model_id"]
    except (ValueError, KeyError, TypeError) as exc:
        raise ModelError(f"{path} is unreadable") from exc
    if model_id != spec.model_id:
        raise ModelError(f"{path} is for model {model_id}, not {spec.model_id}")
    if not ok or vectors.shape[0] != len(texts):
        raise ModelError(f"{path} is for another probe set; run `semmem model reference`")
    return vectors
