"""``semmem --help`` reads like the README: a version, the defaults serve starts with, the
token it needs, values as ``TEXT``/``N`` (not ``{text}``, ``<str>``), no ``<bool>`` on flags,
and each command's line in the list unbroken mid-sentence (issue 62, item 6)."""

from __future__ import annotations

import re
from importlib.metadata import version

import typer
from typer.testing import CliRunner

from semmem.cli.commands import app

runner = CliRunner()
WIDE = {"COLUMNS": "200", "TERMINAL_WIDTH": "200", "NO_COLOR": "1"}


def _help(*args: str) -> str:
    result = runner.invoke(app, [*args, "--help"], env=WIDE)
    assert result.exit_code == 0, result.output
    return result.stdout


def _commands(group: object, path: tuple[str, ...] = ()) -> list[tuple[str, ...]]:
    found: list[tuple[str, ...]] = []
    for name, command in getattr(group, "commands", {}).items():
        found.append((*path, name))
        found += _commands(command, (*path, name))
    return found


def test_version() -> None:
    result = runner.invoke(app, ["--version"])
    assert result.exit_code == 0 and result.stdout == f"semmem {version('semmem')}\n"


def test_serve_help_shows_its_defaults_and_the_token_it_needs() -> None:
    text = _help("serve")
    for default in ("127.0.0.1", "8080", "semmem-data", "/memory"):
        assert f"[default: ({default})]" in text, default
    assert "SEMMEM_TOKENS" in text and "--insecure" in text
    assert "SEMMEM_TOKENS" in _help()


def test_every_usage_names_values_in_capitals_and_flags_carry_no_type() -> None:
    tree = typer.main.get_command(app)
    commands = _commands(tree)
    assert len(commands) > 30
    for path in [(), *commands]:
        text = _help(*path)
        assert "<bool>" not in text and "<str>" not in text and "<int>" not in text, path
        usage = next(line for line in text.splitlines() if "Usage:" in line)
        assert "{" not in usage, (path, usage)
    usage = {name: _help(name).split("Usage: ")[1].split("\n")[0].strip()
             for name in ("remember", "forget", "search")}
    assert usage == {"remember": "semmem remember [OPTIONS] TEXT",
                     "forget": "semmem forget [OPTIONS] N",
                     "search": "semmem search [OPTIONS] QUERY"}, usage


def test_no_command_help_breaks_a_line_mid_sentence() -> None:
    """A docstring's line breaks were kept: the top list broke its rows after "disk at"."""
    tree = typer.main.get_command(app)
    for path in _commands(tree):
        command = tree
        for name in path:
            command = command.commands[name]  # type: ignore[attr-defined]
        for paragraph in (command.help or "").split("\n\n"):
            assert "\n" not in paragraph, (path, paragraph)
    rows = _help().split("Commands")[1]
    assert re.search(r"│ forget-matching +Forget every fact the filter covers \(at least one "
                     r"option\); their texts leave disk at the next maintenance", rows), rows
