"""`semmem declare`: the declaration is generated from the served tools and obeys the contract."""

from __future__ import annotations

import copy
import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from semmem.cli.commands import app as cli
from semmem.errors import InvalidInput
from semmem.protocol.declaration import check_tools, render_declaration, tools_declaration
from semmem.protocol.tools import BY_NAME, TOOLS

README = Path(__file__).resolve().parents[2] / "README.md"
BEGIN, END = "<!-- semmem declare: begin -->", "<!-- semmem declare: end -->"


def test_declare_readme_copy_matches_generated() -> None:
    """The README shows exactly what `semmem declare` prints (regenerate it if this fails)."""
    text = README.read_text(encoding="utf-8")
    assert BEGIN in text and END in text, "README lacks the declaration block markers"
    block = text.split(BEGIN, 1)[1].split(END, 1)[0].strip()
    match = re.fullmatch(r"```ts\n(.*)\n```", block, re.DOTALL)
    assert match, "the declaration block must be one ```ts fence"
    assert match.group(1) == render_declaration(), (
        "README declaration drifted: run `semmem declare` and paste its output into README.md"
    )


def test_declare_cli_prints_declaration() -> None:
    """`semmem declare` prints render_declaration(); `--json` prints just the tools array."""
    runner = CliRunner()
    full = runner.invoke(cli, ["declare"])
    assert full.exit_code == 0
    assert full.output == render_declaration() + "\n"
    only = runner.invoke(cli, ["declare", "--json", "--path", "/oc-memory"])
    assert only.exit_code == 0
    assert json.loads(only.output) == [spec.declaration() for spec in TOOLS]


def test_declare_cli_bad_path_refused() -> None:
    """A path with a query is refused with a clear message and exit 1."""
    result = CliRunner().invoke(cli, ["declare", "--path", "/memory?x=1"])
    assert result.exit_code == 1
    assert "query or fragment" in result.output


def test_declare_uses_served_schemas() -> None:
    """Each declared input schema is the very schema the server validates arguments with."""
    for tool in tools_declaration():
        spec = BY_NAME[tool["name"]]
        assert tool["input"] == spec.input == spec.validator.schema
        assert tool["access"] == spec.access and tool["idempotent"] is spec.idempotent


def test_declare_path_and_max_bytes_rendered() -> None:
    """The path and maxBytes given appear in the TypeScript block."""
    out = render_declaration(path="/oc-memory", max_bytes=16_384)
    assert 'path: "/oc-memory",' in out and 'pathPrefix: "/oc-memory",' in out
    assert "maxBytes: 16_384," in out
    assert "httpMemory({" in out


def test_declare_tools_per_design() -> None:
    """search is a read tool; remember/update/forget are idempotent write tools."""
    decl = {t["name"]: t for t in tools_declaration()}
    assert list(decl) == ["search", "remember", "update", "forget"]
    assert decl["search"]["access"] == "read"
    for name in ("remember", "update", "forget"):
        assert (decl[name]["access"], decl[name]["idempotent"]) == ("write", True)
    assert decl["search"]["input"]["properties"]["limit"]["maximum"] == 50
    assert decl["update"]["input"]["required"] == ["n", "text"]
    for name in ("update", "forget"):
        assert "number" in decl[name]["description"] and "conflict" in decl[name]["description"]
    for name in ("remember", "update", "forget"):
        assert "stored" in decl[name]["description"]


@pytest.mark.parametrize("path", ["memory", "//memory", "/a b", "/a\tb", "/m?x", "/m#x", ""])
def test_declare_path_rules(path: str) -> None:
    """Single leading '/', no whitespace, query or fragment."""
    with pytest.raises(InvalidInput):
        render_declaration(path=path)


@pytest.mark.parametrize("max_bytes", [0, 16_385, -1])
def test_declare_max_bytes_rules(max_bytes: int) -> None:
    """maxBytes is 1–16,384."""
    with pytest.raises(InvalidInput):
        render_declaration(max_bytes=max_bytes)


def _set(key: str, value: Any) -> Callable[[list[dict[str, Any]]], None]:
    def change(tools: list[dict[str, Any]]) -> None:
        tools[0][key] = value
    return change


def _set_input(key: str, value: Any) -> Callable[[list[dict[str, Any]]], None]:
    def change(tools: list[dict[str, Any]]) -> None:
        tools[1]["input"][key] = value
    return change


def _drop(key: str) -> Callable[[list[dict[str, Any]]], None]:
    def change(tools: list[dict[str, Any]]) -> None:
        del tools[0][key]
    return change


def _nine(tools: list[dict[str, Any]]) -> None:
    for i in range(5):
        tools.append({**copy.deepcopy(tools[0]), "name": f"extra_{i}"})


def _memory_property(tools: list[dict[str, Any]]) -> None:
    tools[1]["input"]["properties"]["memory"] = {"type": "string"}


def _memory_required(tools: list[dict[str, Any]]) -> None:
    tools[1]["input"]["required"].append("memory")


def _nested_ref(tools: list[dict[str, Any]]) -> None:
    tools[1]["input"]["properties"]["text"] = {"$ref": "#/$defs/t"}


BROKEN: dict[str, Callable[[list[dict[str, Any]]], None]] = {
    "more_than_8_tools": _nine,
    "name_uppercase": _set("name", "Search"),
    "name_dash": _set("name", "web-search"),
    "name_33_chars": _set("name", "a" * 33),
    "name_empty": _set("name", ""),
    "name_duplicate": _set("name", "remember"),
    "description_missing": _drop("description"),
    "description_blank": _set("description", "  "),
    "access_missing": _drop("access"),
    "access_read_write": _set("access", "read-write"),
    "idempotent_not_bool": _set("idempotent", "yes"),
    "unknown_key": _set("timeout", 5),
    "input_missing": _drop("input"),
    "input_not_object_type": _set_input("type", "array"),
    "input_additional_properties_open": _set_input("additionalProperties", True),
    "input_additional_properties_missing": lambda t: t[1]["input"].pop("additionalProperties"),
    "input_invalid_schema": _set_input("minProperties", -1),
    "input_ref": _nested_ref,
    "input_memory_property": _memory_property,
    "input_memory_required": _memory_required,
}


@pytest.mark.parametrize("rule", list(BROKEN))
def test_declare_rule_violation_refused(rule: str) -> None:
    """Each declaration rule of the contract is checked (and the real tools pass them all)."""
    tools = copy.deepcopy(tools_declaration())
    check_tools(tools)
    BROKEN[rule](tools)
    with pytest.raises(InvalidInput) as info:
        check_tools(tools)
    assert info.value.details and info.value.details["problems"]
