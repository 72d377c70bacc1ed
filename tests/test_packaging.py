"""A plain install serves without torch: pyproject's dependencies, and everything they pull in,
hold none of the torch stack, which only the ``reference`` extra brings."""

from __future__ import annotations

import re
import tomllib
from importlib.metadata import PackageNotFoundError, requires
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TORCH_STACK = {"torch", "transformers", "sentence-transformers", "scipy", "scikit-learn",
               "sympy"}


def _name(requirement: str) -> str:
    return re.split(r"[\s\[<>=!~;(]", requirement, maxsplit=1)[0].lower().replace("_", "-")


def _project() -> dict[str, object]:
    project: dict[str, object] = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    return project


def test_plain_dependencies_have_none_of_the_torch_stack() -> None:
    names = {_name(r) for r in _project()["dependencies"]}  # type: ignore[attr-defined]
    assert names & TORCH_STACK == set()
    assert {"onnxruntime", "tokenizers", "lancedb", "onnx", "safetensors"} <= names


def test_reference_extra_brings_torch_and_sentence_transformers() -> None:
    extras = _project()["optional-dependencies"]
    assert isinstance(extras, dict)
    assert "torch==2.13.0" in extras["reference"]
    assert {_name(r) for r in extras["reference"]} == {"torch", "sentence-transformers"}


def test_nothing_a_plain_install_pulls_in_needs_the_torch_stack() -> None:
    """The dependency closure, read from the installed packages' metadata (no extras)."""
    seen: set[str] = set()
    todo = [_name(r) for r in _project()["dependencies"]]  # type: ignore[attr-defined]
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        seen.add(name)
        try:
            reqs = requires(name) or []
        except PackageNotFoundError:
            continue
        todo += [_name(r) for r in reqs if "extra ==" not in r and "extra==" not in r]
    assert seen & TORCH_STACK == set(), sorted(seen & TORCH_STACK)
