"""The floors of the tree (issue 54, "Capabilities get narrow collaborators, not Memory"): no
import between packages runs back up (no circle of packages), nothing reaches around Memory
into its store, and no package below Memory imports it.

A package is a subpackage of ``semmem/`` or a top-level module; every import counts, those
under ``TYPE_CHECKING`` and inside functions too (a hidden import is still an arrow).
"""

from __future__ import annotations

import ast
from collections import defaultdict
from collections.abc import Iterator, Mapping, Set
from pathlib import Path

SEMMEM = Path(__file__).resolve().parents[1] / "semmem"
# The packages below Memory: none of them names it (they declare what they need instead).
BELOW_MEMORY = frozenset({
    "keyed", "conversations", "stored", "scoped", "lifecycle", "store", "ranking", "embedding",
    "scheduling", "protocol", "items", "rules", "targets", "results", "writes", "importing"})
CORE = frozenset({"semmem/memory.py"})  # the one module that owns Memory's store

Edges = Mapping[tuple[str, str], Set[str]]  # (from package, to package) -> "file:line"s


def package(module: str) -> str:
    """The package a module is on: ``semmem.store.views`` -> ``store``."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "semmem"


def module_of(path: Path, root: Path) -> tuple[str, bool]:
    """The dotted name of a file under ``root`` (the ``semmem`` folder), and whether it is a
    package's ``__init__``."""
    parts = list(path.relative_to(root.parent).with_suffix("").parts)
    init = parts[-1] == "__init__"
    return ".".join(parts[:-1] if init else parts), init


def imports(tree: ast.AST, module: str, init: bool, root: Path) -> Iterator[tuple[str, int]]:
    """Every semmem module ``tree`` imports (anywhere in it), with its line."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.split(".")[0] == "semmem":
                    yield alias.name, node.lineno
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = module.split(".") if init else module.split(".")[:-1]
                base = base[:len(base) - node.level + 1]
                name = ".".join([*base, *([node.module] if node.module else [])])
            else:
                name = node.module or ""
            if name.split(".")[0] != "semmem":
                continue
            if name != "semmem":
                yield name, node.lineno
                continue
            for alias in node.names:  # ``from semmem import rules``: the module it names
                inner = root / alias.name
                found = inner.is_dir() or inner.with_suffix(".py").is_file()
                yield (f"semmem.{alias.name}" if found else "semmem"), node.lineno


def package_graph(root: Path) -> dict[tuple[str, str], set[str]]:
    """Each import between two packages of ``root`` (a ``semmem`` folder) -> where it is."""
    edges: dict[tuple[str, str], set[str]] = defaultdict(set)
    for path in sorted(root.rglob("*.py")):
        module, init = module_of(path, root)
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for name, line in imports(tree, module, init, root):
            ends = package(module), package(name)
            if ends[0] != ends[1]:
                edges[ends].add(f"{path.relative_to(root.parent).as_posix()}:{line}")
    return edges


def circles(edges: Edges) -> list[dict[tuple[str, str], Set[str]]]:
    """Each circle of packages (a strongly connected set of more than one), as the edges that
    lie on it with their files; ``[]``: the packages stand in floors."""
    after: dict[str, set[str]] = defaultdict(set)
    for a, b in edges:
        after[a].add(b)

    def reach(start: str) -> set[str]:
        seen: set[str] = set()
        todo = [start]
        while todo:
            for nxt in after[todo.pop()]:
                if nxt not in seen:
                    seen.add(nxt)
                    todo.append(nxt)
        return seen

    reached = {node: reach(node) for node in list(after)}
    found: list[dict[tuple[str, str], Set[str]]] = []
    placed: set[str] = set()
    for node in sorted(reached):
        if node in placed or node not in reached[node]:
            continue
        ring = {other for other in reached[node] if node in reached.get(other, set())}
        placed |= ring
        found.append({(a, b): files for (a, b), files in sorted(edges.items())
                      if a in ring and b in ring})
    return found


def describe(found: list[dict[tuple[str, str], Set[str]]]) -> str:
    """The circles for a failure: each edge on them and the files that draw it."""
    return "\n".join(f"{a} -> {b}: {', '.join(sorted(files))}"
                     for ring in found for (a, b), files in ring.items())


def reach_arounds(tree: ast.AST) -> list[int]:
    """The lines where code takes a memory's store (``memory.store``, ``x.memory.store``)."""
    return sorted(node.lineno for node in ast.walk(tree)
                  if isinstance(node, ast.Attribute) and node.attr == "store"
                  and ((isinstance(node.value, ast.Name) and node.value.id == "memory")
                       or (isinstance(node.value, ast.Attribute)
                           and node.value.attr == "memory")))


def names_memory(tree: ast.AST, module: str, init: bool, root: Path) -> list[int]:
    """The lines where ``tree`` imports ``semmem.memory`` (or ``Memory`` from ``semmem``)."""
    lines = [line for name, line in imports(tree, module, init, root)
             if name == "semmem.memory" or name.startswith("semmem.memory.")]
    lines += [node.lineno for node in ast.walk(tree)
              if isinstance(node, ast.ImportFrom) and node.module == "semmem" and not node.level
              and any(alias.name == "Memory" for alias in node.names)]
    return sorted(lines)


def test_no_import_between_packages_runs_back_up() -> None:
    found = circles(package_graph(SEMMEM))
    assert found == [], "packages in a circle of imports:\n" + describe(found)


def test_the_circle_check_sees_a_circle_and_names_its_files(tmp_path: Path) -> None:
    edges = {("a", "b"): {"x/a.py:3"}, ("b", "c"): {"x/b.py:4"}, ("c", "a"): {"x/c.py:5"},
             ("c", "d"): {"x/c.py:6"}, ("d", "e"): {"x/d.py:7"}}
    assert circles(edges) == [{("a", "b"): {"x/a.py:3"}, ("b", "c"): {"x/b.py:4"},
                               ("c", "a"): {"x/c.py:5"}}]
    assert "c -> a: x/c.py:5" in describe(circles(edges))
    # A tree whose lower package imports the higher one only for typing, inside a function or
    # relatively: each is an arrow, and the circle is seen.
    root = tmp_path / "semmem"
    for folder in ("low", "high", "mid"):
        (root / folder).mkdir(parents=True)
        (root / folder / "__init__.py").write_text("")
    (root / "__init__.py").write_text("")
    (root / "high" / "top.py").write_text("from semmem.low.base import B\n")
    (root / "low" / "base.py").write_text(
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from semmem.high.top import T\n")
    (root / "mid" / "m.py").write_text("def f():\n    from ..low import base\n")
    (root / "low" / "uses.py").write_text("from semmem import mid\n")
    graph = package_graph(root)
    assert graph[("low", "high")] == {"semmem/low/base.py:3"}
    assert graph[("mid", "low")] == {"semmem/mid/m.py:2"}
    assert graph[("low", "mid")] == {"semmem/low/uses.py:1"}
    assert [set(ring) for ring in circles(graph)] == [
        {("high", "low"), ("low", "high"), ("low", "mid"), ("mid", "low")}]


def test_nothing_reaches_around_memory_into_its_store() -> None:
    found = [f"{path.relative_to(SEMMEM.parent).as_posix()}:{line}"
             for path in sorted(SEMMEM.rglob("*.py"))
             if path.relative_to(SEMMEM.parent).as_posix() not in CORE
             for line in reach_arounds(ast.parse(path.read_text(encoding="utf-8")))]
    assert found == []
    # Positive control: both forms are seen, a store of one's own is not.
    seen = ast.parse("a = memory.store\nb = self.memory.store.meta()\nc = self.store\n")
    assert reach_arounds(seen) == [1, 2]


def test_no_package_below_memory_imports_it() -> None:
    found = []
    for path in sorted(SEMMEM.rglob("*.py")):
        module, init = module_of(path, SEMMEM)
        if package(module) in BELOW_MEMORY:
            tree = ast.parse(path.read_text(encoding="utf-8"))
            found += [f"{module}:{line}" for line in names_memory(tree, module, init, SEMMEM)]
    assert found == []
    # Positive control: every way of naming it is seen, under TYPE_CHECKING too.
    seen = ast.parse("if TYPE_CHECKING:\n    from semmem.memory import Memory\n"
                     "import semmem.memory\nfrom semmem import memory\nfrom semmem import Memory\n")
    assert names_memory(seen, "semmem.keyed.items", False, SEMMEM) == [2, 3, 4, 5]
