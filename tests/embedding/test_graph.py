"""Set-up and serving without torch: the ONNX file built from the weights and verified against
the committed reference vectors, a serving folder without the weights, and a clear error
naming the extra when the torch encoder is asked for without it.

Torch is blocked in a subprocess (``sys.modules[name] = None`` makes every import of it fail),
as on a plain ``pip install semmem``.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from semmem.embedding.files import (
    ONNX_NAME,
    PROBE_MIN_COSINE,
    PROBE_NAME,
    WEIGHTS_NAME,
    default_model_dir,
    load_spec,
    verify,
)
from semmem.embedding.probes import PROBES, REFERENCE_NAME, load_reference, texts_sha256
from semmem.errors import ModelError

pytestmark = pytest.mark.model

ROOT = Path(__file__).resolve().parents[2]
TORCH_STACK = ("torch", "sentence_transformers", "transformers")
BLOCK = f"import sys\nfor _m in {TORCH_STACK!r}:\n    sys.modules[_m] = None\n"
EXTRA = "pip install 'semmem[reference]'"


def _no_torch(code: str, *args: str, env: dict[str, str] | None = None,
              check: bool = True) -> subprocess.CompletedProcess[str]:
    """Run ``code`` in a fresh interpreter in which torch cannot be imported."""
    full_env = {**os.environ, "PYTHONPATH": str(ROOT), **(env or {})}
    return subprocess.run([sys.executable, "-c", BLOCK + code, *args], capture_output=True,
                          text=True, check=check, timeout=600, env=full_env, cwd=ROOT)


CLI = "import sys\nfrom semmem.cli import main\nsys.argv = ['semmem', *sys.argv[1:]]\nmain()\n"


def _model_copy(tmp_path: Path, *, onnx: bool, weights: bool = True) -> Path:
    """A copy of the bundled model folder with its manifest and reference vectors."""
    src = default_model_dir()
    dst = tmp_path / "models" / src.name
    skip = {".verified"} | (set() if onnx else {ONNX_NAME, PROBE_NAME}) | (
        set() if weights else {WEIGHTS_NAME})
    shutil.copytree(src, dst, ignore=lambda _d, names: [n for n in names if n in skip])
    for name in ("manifest.json", REFERENCE_NAME):
        shutil.copy(src.parent / name, dst.parent / name)
    return dst


@pytest.fixture(scope="module")
def onnx_ready() -> None:
    if not (default_model_dir() / PROBE_NAME).is_file():
        pytest.skip("no verified ONNX file (run `semmem model fetch`)")


def test_reference_vectors_are_the_probe_sets_for_the_pinned_model() -> None:
    spec = load_spec(default_model_dir())
    vectors = load_reference(spec)
    record = json.loads((spec.folder.parent / REFERENCE_NAME).read_text())
    assert vectors.shape == (len(PROBES), 384)
    assert record["texts"] == list(PROBES) and record["texts_sha256"] == texts_sha256(PROBES)
    assert record["weights_sha256"] == spec.files[WEIGHTS_NAME]


@pytest.mark.slow
def test_fetch_builds_and_probes_the_onnx_file_without_torch(tmp_path: Path) -> None:
    folder = _model_copy(tmp_path, onnx=False)
    fetched = _no_torch(CLI, "model", "fetch", "--model", str(folder))
    assert "ONNX file verified by its outputs: 29 probes" in fetched.stdout, fetched.stderr
    record = json.loads((folder / PROBE_NAME).read_text())
    assert record["model_id"] == load_spec(folder).model_id
    assert record["probe"]["against"] == REFERENCE_NAME
    for cosines in (record["probe"]["cosine_single"], record["probe"]["cosine_batch"]):
        assert len(cosines) == len(PROBES) and min(cosines) >= PROBE_MIN_COSINE
    assert record["built_with"]["fused"]["Attention"] == 6

    verified = _no_torch(CLI, "model", "verify", "--probe", "--model", str(folder))
    lines = verified.stdout.splitlines()
    assert lines[1] == "ONNX file model.onnx OK (the file its probe verified)"
    assert float(lines[2].rsplit(" ", 1)[1]) >= PROBE_MIN_COSINE
    assert lines[3] == f"probe against torch skipped: it needs {EXTRA}"


@pytest.mark.slow
def test_build_is_byte_reproducible(tmp_path: Path, onnx_ready: None) -> None:
    from semmem.embedding.export import build_onnx

    installed = json.loads((default_model_dir() / PROBE_NAME).read_text())
    if "built_with" not in installed:
        pytest.skip("the installed ONNX file was made by an older set-up")
    folder = _model_copy(tmp_path, onnx=False)
    assert build_onnx(folder)["onnx_sha256"] == installed["onnx_sha256"]


def test_install_refuses_reference_vectors_of_another_model(tmp_path: Path,
                                                            onnx_ready: None) -> None:
    from semmem.embedding.export import install_onnx

    folder = _model_copy(tmp_path, onnx=False)
    reference = folder.parent / REFERENCE_NAME
    record = json.loads(reference.read_text())
    reference.write_text(json.dumps({**record, "model_id": "other@123"}))
    with pytest.raises(ModelError, match="is for model other@123"):
        install_onnx(folder, default_model_dir() / ONNX_NAME)
    reference.unlink()
    with pytest.raises(ModelError, match="no probe reference vectors"):
        install_onnx(folder, default_model_dir() / ONNX_NAME)
    assert not (folder / PROBE_NAME).exists()


def test_onnx_encoder_serves_a_folder_without_the_weights(tmp_path: Path,
                                                          onnx_ready: None) -> None:
    from semmem.embedding.choice import check_model, open_model

    folder = _model_copy(tmp_path, onnx=True, weights=False)
    with pytest.raises(ModelError, match=r"model\.safetensors is missing"):
        verify(folder)
    assert check_model(folder).name == folder.name
    model = open_model(folder)
    assert getattr(model, "encoder", None) == "onnx"
    assert model.embed_batch(["hello"]).shape == (1, 384)
    out = _no_torch(CLI, "model", "verify", "--model", str(folder))
    assert out.stdout.splitlines()[1] == "ONNX file model.onnx OK (the file its probe verified)"


def test_torch_encoder_without_the_extra_names_it(tmp_path: Path, onnx_ready: None) -> None:
    code = ("from semmem.settings import Settings\n"
            "from semmem.wiring import load_embedder\n"
            "from semmem.errors import ModelError\n"
            "try:\n"
            "    load_embedder(Settings(encoder='torch'))\n"
            "except ModelError as exc:\n"
            "    print(exc.code, exc.message)\n")
    assert EXTRA in _no_torch(code).stdout
    assert _no_torch(code).stdout.startswith("unavailable ")

    env = {"SEMMEM_ENCODER": "torch", "SEMMEM_DATA": str(tmp_path / "data"),
           "SEMMEM_TOKENS": "t" * 16, "SEMMEM_PORT": "1"}
    served = _no_torch(CLI, "serve", env=env, check=False)  # refused before the port opens
    lines = served.stderr.strip().splitlines()
    assert served.returncode == 1 and len(lines) == 1 and lines[0].startswith("error: ")
    assert EXTRA in lines[0]
    made = _no_torch(CLI, "model", "reference", "--out", str(tmp_path / "r.json"), check=False)
    assert made.returncode == 1 and made.stderr.startswith("error: ") and EXTRA in made.stderr
    assert not (tmp_path / "r.json").exists()


def test_auto_without_torch_and_without_onnx_says_to_fetch(tmp_path: Path) -> None:
    folder = _model_copy(tmp_path, onnx=False)
    code = ("import sys\nfrom pathlib import Path\nfrom semmem.embedding.choice import open_model\n"
            "from semmem.errors import ModelError\n"
            "try:\n    open_model(Path(sys.argv[1]))\n"
            "except ModelError as exc:\n    print(exc.message)\n")
    out = _no_torch(code, str(folder)).stdout
    assert "no verified ONNX file" in out and "semmem model fetch" in out
