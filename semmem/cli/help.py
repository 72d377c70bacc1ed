"""How ``semmem --help`` reads: like the README, not like the framework's defaults.

Typer's help marks every value with its Python type (``--help <bool>``, ``--data <str>``) and
writes a required argument as ``{text}``; docstrings keep their line breaks, so the command
list broke lines mid-sentence. :class:`HelpGroup` (the top command) tidies the whole tree once
it is built: arguments read ``TEXT`` (``[TEXT]`` when optional), flags carry no marker, values
read ``TEXT``, ``N``, ``X``, ``PATH``, and a paragraph of help is one line, wrapped by the
terminal.
"""

from __future__ import annotations

import re
from importlib.metadata import PackageNotFoundError, version
from types import SimpleNamespace
from typing import Any

import typer
from typer.core import TyperArgument, TyperCommand, TyperGroup, TyperOption

# A value's marker by its Python type's name (typer's labels): the words the README uses.
_VALUES = {"str": "TEXT", "int": "N", "float": "X", "path": "PATH", "file": "PATH",
           "directory": "DIR", "list[str]": "TEXT", "list[int]": "N"}
_LINE_BREAK = re.compile(r"(?<!\n)\n(?!\n)")


class _Argument(TyperArgument):
    """An argument written as its name in capitals: ``TEXT``, ``[QUERY]``, ``FILES...``."""

    def _usage_display_name(self) -> str:
        name = self.display_name_raw
        name = name if self.required else f"[{name}]"
        return name + ("..." if self.nargs != 1 else "")

    def display_type_rich(self, ctx: Any) -> str | None:
        return None  # the name says it


def version_text() -> str:
    """``semmem <version>``, from the installed package's metadata."""
    try:
        return f"semmem {version('semmem')}"
    except PackageNotFoundError:
        return "semmem (not installed: running from a source tree)"


def print_version(value: bool) -> None:
    """``--version``: print it and exit."""
    if value:
        typer.echo(version_text())
        raise typer.Exit()


def _paragraphs(text: str | None) -> str | None:
    """Each paragraph on one line (a blank line still separates them)."""
    return None if text is None else _LINE_BREAK.sub(" ", text.strip())


def _marker(option: TyperOption) -> str:
    label = option.display_type(SimpleNamespace())  # type: ignore[arg-type]
    return _VALUES.get(label.strip("<>"), label.strip("<>").upper())


def _tidy_param(param: Any) -> None:
    if isinstance(param, TyperArgument):
        param.__class__ = _Argument
        if param.metavar is None:
            param.metavar = (param.name or "value").upper()
    elif isinstance(param, TyperOption) and param.metavar is None:
        param.metavar = "" if param.is_flag or param.count else _marker(param)
    if getattr(param, "help", None):
        param.help = _paragraphs(param.help)


def tidy(command: TyperCommand | TyperGroup) -> None:
    """Tidy ``command`` and everything under it (see the module's docstring)."""
    command.help = _paragraphs(command.help)
    command.short_help = _paragraphs(command.short_help)
    for param in command.params:
        _tidy_param(param)
    help_option = command.get_help_option(
        SimpleNamespace(help_option_names=["--help"]))  # type: ignore[arg-type]
    if help_option is not None:
        _tidy_param(help_option)
    if isinstance(command, TyperGroup):
        for sub in command.commands.values():
            tidy(sub)  # type: ignore[arg-type]


class HelpGroup(TyperGroup):
    """The ``semmem`` command: its whole tree tidied once built."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        tidy(self)
