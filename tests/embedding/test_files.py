"""The bundled model: pinned hashes, clear errors for missing or altered files."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from semmem.embedding.files import default_model_dir, load_spec, verify
from semmem.embedding.reference import SentenceTransformerEmbedder
from semmem.errors import ModelError

UPSTREAM_SAFETENSORS = "53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db"


def _copy_model(tmp_path: Path) -> Path:
    src = default_model_dir()
    dst = tmp_path / src.name
    shutil.copytree(src, dst)
    shutil.copy(src.parent / "manifest.json", tmp_path / "manifest.json")
    return dst


def test_manifest_pins_upstream_safetensors() -> None:
    spec = load_spec(default_model_dir())
    assert spec.files["model.safetensors"] == UPSTREAM_SAFETENSORS
    assert spec.model_id.startswith("all-MiniLM-L6-v2@")


def test_verify_bundled_model_passes() -> None:
    assert verify(default_model_dir()).name == "all-MiniLM-L6-v2"


def test_verify_missing_file_says_how_to_fix(tmp_path: Path) -> None:
    folder = _copy_model(tmp_path)
    (folder / "tokenizer.json").unlink()
    with pytest.raises(ModelError, match=r"tokenizer\.json is missing; run `semmem model fetch"):
        verify(folder)


def test_verify_altered_file_is_refused(tmp_path: Path) -> None:
    folder = _copy_model(tmp_path)
    with (folder / "vocab.txt").open("a") as fh:
        fh.write("extra\n")
    with pytest.raises(ModelError, match=r"vocab\.txt is altered"):
        verify(folder)


def test_embedder_refuses_to_load_altered_model(tmp_path: Path) -> None:
    folder = _copy_model(tmp_path)
    (folder / "config.json").write_text(json.dumps({"hacked": True}))
    with pytest.raises(ModelError, match="altered"):
        SentenceTransformerEmbedder(folder)


def test_unlisted_model_folder_is_refused(tmp_path: Path) -> None:
    (tmp_path / "manifest.json").write_text("{}")
    (tmp_path / "other").mkdir()
    with pytest.raises(ModelError, match="not listed"):
        verify(tmp_path / "other")


def test_real_model_embeds_normalised_vectors(real_embedder: SentenceTransformerEmbedder) -> None:
    vecs = real_embedder.embed_batch(["Prefers metric units", "which units do I prefer?"])
    assert vecs.shape == (2, 384)
    assert abs(float((vecs[0] ** 2).sum()) - 1.0) < 1e-4
    assert float(vecs[0] @ vecs[1]) > 0.4
