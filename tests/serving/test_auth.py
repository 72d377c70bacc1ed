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
    with pytest.raises(Unauthorized):
        auth.check("Bearer mcp-tok")
    with pytest.raises(Forbidden, match="not bound to a partition"):
        auth.check_mcp("Bearer plain")
    for header in (None, "Bearer", "Bearer nope", "Basic mcp-tok"):
        with pytest.raises(Unauthorized):
            auth.check_mcp(header)
    assert ProviderAuth(Tokens(), Tokens(), insecure=True).check_mcp(None) is None
