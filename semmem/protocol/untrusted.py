"""A caller's strings, read and logged safely: numbers in ASCII digits only, control
characters escaped before a string reaches a log line.

``str.isdigit`` is true for ``"²"`` and ``"٣"``, and ``int()`` then either raises or reads a
digit the caller's host never meant; a ``%0A`` in a path or an operation id would start a new,
forged log line. Every caller string that is parsed as a number (``contract.ascii_int``, named
here too) or logged goes through here.
"""

from __future__ import annotations

import re

from semmem.contract import ascii_int as ascii_int  # its home: the contract's parsing

# C0 and C1 controls, DEL, and the Unicode line and paragraph separators.
_CONTROLS = re.compile(r"[\x00-\x1f\x7f-\x9f\u2028\u2029]")


def escaped(text: str, keep: str = "") -> str:
    """``text`` with its control characters (but those in ``keep``) as ``\\xNN``/``\\uNNNN``
    escapes."""
    def one(found: re.Match[str]) -> str:
        char = found.group()
        return char if char in keep else char.encode("unicode_escape").decode("ascii")

    return _CONTROLS.sub(one, text)


def loggable(text: str, limit: int = 200) -> str:
    """``text`` for a log line: control characters as ``\\xNN``/``\\uNNNN`` escapes (so it stays
    one line), cut to ``limit`` characters."""
    return escaped(text if len(text) <= limit else text[:limit] + "…")
