"""A plain install serves without torch: pyproject's dependencies, and everything they pull in,
hold none of the torch stack, which only the ``reference`` extra brings."""

from __future__ import annotations

import re
import tomllib
from fnmatch import fnmatch
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


def _in_build_context(path: str, rules: list[str]) -> bool:
    """Whether ``.dockerignore``'s rules (the last match wins, ``!`` takes a path back) leave
    ``path`` in the build context."""
    kept = True
    for rule in rules:
        back = rule.startswith("!")
        pattern = rule.lstrip("!").rstrip("/")
        if fnmatch(path, pattern) or path.startswith(pattern + "/"):
            kept = back
    return kept


def test_every_file_the_dockerfile_copies_is_in_the_build_context() -> None:
    """A file the Dockerfile copies but ``.dockerignore`` leaves out fails the build (it did:
    the multilingual model's probe reference and the calibration)."""
    rules = [line.strip() for line in (ROOT / ".dockerignore").read_text().splitlines()
             if line.strip() and not line.startswith("#")]
    dockerfile = (ROOT / "Dockerfile").read_text().replace("\\\n", " ")
    sources = [source for line in dockerfile.splitlines() if line.startswith("COPY ")
               and "--from=" not in line for source in line.split()[1:-1]]
    assert "semmem" in sources and len(sources) >= 4
    for source in sources:
        assert (ROOT / source).exists(), source
        assert _in_build_context(source, rules), f"{source} is left out by .dockerignore"
    assert not _in_build_context(".venv/bin/python", rules)  # the rules do leave things out


def test_the_image_leaves_its_models_readable_to_the_user_that_serves() -> None:
    """``semmem`` makes its files private (umask 077), so the models it fetches in the build
    stage were root's alone and the image's ``semmem`` user could not read them (every start
    refused the model path): the last step that runs ``semmem`` opens them to all."""
    build = (ROOT / "Dockerfile").read_text().split("AS runtime")[0].replace("\\\n", " ")
    runs = [line for line in build.splitlines() if line.startswith("RUN ")]
    last = max(i for i, line in enumerate(runs) if "semmem model" in line)
    assert runs[last].rstrip().endswith("chmod -R a+rX /opt/semmem/models"), runs[last]


def _make_extras(target: str) -> set[str]:
    """The extras the Makefile installs for ``target``: its prerequisites' stamps followed to
    their recipes' ``-e '.[…]'`` (and a ``semmem[…]`` extra's own, followed too)."""
    make = (ROOT / "Makefile").read_text()
    names = dict(re.findall(r"^(\w+)\s*:=\s*(\S+)$", make, re.M))

    def expand(text: str) -> str:
        while (done := re.sub(r"\$\((\w+)\)", lambda m: names.get(m[1], m[1]), text)) != text:
            text = done
        return text

    rules = {expand(name): (expand(prereqs), recipe) for name, prereqs, recipe in
             re.findall(r"^(\S+?):([^=\n]*)\n((?:\t.*\n)*)", make, re.M)}
    extras = _project()["optional-dependencies"]
    assert isinstance(extras, dict)
    found: set[str] = set()
    todo = [target]
    while todo:
        prereqs, recipe = rules.get(todo.pop(), ("", ""))
        for extra in re.findall(r"-e '\.\[([\w,-]+)\]'", recipe):
            found |= set(extra.split(","))
        todo += prereqs.split()
    for extra in list(found):
        for req in extras[extra]:
            if req.startswith("semmem["):
                found |= set(req[len("semmem["):-1].split(","))
    return found


def test_lint_and_notebooks_set_ups_bring_no_torch() -> None:
    """`make lint` ran ruff and mypy after installing torch (2.6 GB); the notebooks needed the
    same set-up. Each now has its own, without the reference extra; make test's has it."""
    assert "reference" in _make_extras("setup-dev")  # the walk sees the torch set-up
    extras = _project()["optional-dependencies"]
    assert isinstance(extras, dict)
    for target, wanted in (("lint", {"lint"}), ("notebooks", {"notebooks"})):
        chosen = _make_extras(target)
        assert wanted <= chosen and "reference" not in chosen, (target, chosen)
        names = {_name(r) for extra in chosen for r in extras[extra]}
        assert names & TORCH_STACK == set(), (target, names & TORCH_STACK)
