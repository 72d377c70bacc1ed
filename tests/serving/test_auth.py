"""Token bindings in the tokens file: parsing, lookup, and what each kind of token may reach."""

from __future__ import annotations

from pathlib import Path

import pytest

from semmem.errors import Forbidden, InvalidInput, Unauthorized
from semmem.serving.auth import Binding, ProviderAuth, Tokens, load_entries, load_tokens


def test_load_entries_reads_bindings_and_plain_tokens(tmp_path: Path) -> None:
    """Plain lines stay provider tokens; ``partition=``/``access=`` bind a token for MCP."""
    file = tmp_path / "tokens"
    file.write_text("# comment\nplain\n  alice-tok   partition=alice\n"
                    "bob-ro partition=bob access=read\nbob-rw partition=bob access=read-write\n")
    entries = {t: b for t, b, _ in load_entries("inline-1, inline-2 partition=x", file)}
    assert entries == {
        "inline-1": None, "inline-2": Binding("x", True), "plain": None,
        "alice-tok": Binding("alice", True), "bob-ro": Binding("bob", False),
        "bob-rw": Binding("bob", True),
    }
    assert set(load_tokens(None, file)) == {"plain", "alice-tok", "bob-ro", "bob-rw"}


@pytest.mark.parametrize("line", [
    "secret-token partition", "secret-token partition=", "secret-token access=read",
    "secret-token partition=a access=write", "secret-token partition=a partition=b",
    "secret-token owner=a",
])
def test_malformed_binding_refused_without_echoing_the_token(tmp_path: Path, line: str) -> None:
    """A bad binding names its line and the expected form, never the token."""
    file = tmp_path / "tokens"
    file.write_text(f"ok-token\n{line}\n")
    with pytest.raises(InvalidInput) as caught:
        load_entries(None, file)
    assert caught.value.message.startswith("line 2: after the token, expected 'partition=<name>'")
    assert "secret" not in caught.value.message


def test_binding_lookup_and_who_may_use_what() -> None:
    """Bound tokens reach MCP only; plain tokens the provider only; others nothing."""
    auth = ProviderAuth(Tokens(inline="plain,mcp-tok partition=alice access=read"), Tokens())
    assert auth.check_mcp("Bearer mcp-tok") == Binding("alice", False)
    auth.check("Bearer plain")
    with pytest.raises(Forbidden, match="bound to partition 'alice' for MCP"):
        auth.check("Bearer mcp-tok")
    with pytest.raises(Forbidden, match="not bound to a partition"):
        auth.check_mcp("Bearer plain")
    for header in (None, "Bearer", "Bearer nope", "Basic mcp-tok"):
        with pytest.raises(Unauthorized):
            auth.check_mcp(header)
    assert ProviderAuth(Tokens(), Tokens(), insecure=True).check_mcp(None) is None


@pytest.mark.parametrize("char", ["\u2028", "\u2029", "\u0085", "\u000b", "\u000c", "\u001c",
                                  "\u3000", "\u00a0", "\u200b", "\r"])
def test_a_token_line_splits_on_newlines_and_ascii_blanks_only(tmp_path: Path, char: str
                                                               ) -> None:
    """The file was split with ``str.splitlines()`` and its fields with ``str.split()``: a
    partition name holding U+2028 or U+3000 gave a second binding on one line. Now such a
    character is refused at load, by code point, never echoing the line."""
    file = tmp_path / "tokens"
    file.write_text(f"alice-token-000001 partition=alice{char}mallory-token-01 partition=bob\n",
                    encoding="utf-8", newline="")
    with pytest.raises(InvalidInput) as caught:
        load_entries(None, file)
    assert caught.value.message.startswith(f"line 1: holds U+{ord(char):04X}")
    assert "token-0" not in caught.value.message and "alice" not in caught.value.message
    with pytest.raises(InvalidInput, match=r"SEMMEM_TOKENS item 2: holds U\+"):
        load_entries(f"plain-token-000001,alice-token-000001 partition=a{char}b", None)
    with pytest.raises(InvalidInput, match=f"U\\+{ord(char):04X}"):
        Tokens.configured(None, file)  # a server refuses to start with it


def test_a_token_line_keeps_spaces_tabs_crlf_and_a_byte_order_mark(tmp_path: Path) -> None:
    """What does separate: spaces, tabs, ``\\n`` and ``\\r\\n`` line ends, a leading BOM."""
    file = tmp_path / "tokens"
    file.write_bytes("\ufeffplain-token-00001\r\n\talice-token-00001 \t partition=alice\r\n"
                     "  # a comment with \u2028 in it\n".encode())
    assert {t: b for t, b, _ in load_entries(None, file)} == {
        "plain-token-00001": None, "alice-token-00001": Binding("alice", True)}


def test_inline_tokens_may_end_with_line_breaks_but_not_hold_one() -> None:
    """``SEMMEM_TOKENS`` written over several lines still reads; a break inside an item does
    not split it."""
    assert load_tokens("\n  plain-token-00001,\r\n  other-token-00001\n", None) == (
        "plain-token-00001", "other-token-00001")
    with pytest.raises(InvalidInput, match=r"SEMMEM_TOKENS item 1: holds U\+000A"):
        load_entries("alice-token-00001 partition=a\nmallory partition=b", None)
