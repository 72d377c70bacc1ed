"""Bearer tokens: loaded from configuration, compared in constant time."""

from __future__ import annotations

import hmac
import secrets
from collections.abc import Iterable
from pathlib import Path

from semmem.errors import Forbidden, InvalidInput, Unauthorized


def load_tokens(inline: str | None, file: Path | None) -> tuple[str, ...]:
    """Tokens from a comma-separated string and/or a file (one a line; ``#`` starts a comment).

    Raises:
        InvalidInput: the file cannot be read.
    """
    tokens = [t.strip() for t in (inline or "").split(",")]
    if file is not None:
        try:
            lines = Path(file).read_text(encoding="utf-8").splitlines()
        except OSError as exc:
            raise InvalidInput(f"cannot read tokens file {file}: {exc.strerror}") from None
        tokens.extend(line.strip() for line in lines if not line.lstrip().startswith("#"))
    return tuple(dict.fromkeys(t for t in tokens if t))


def generate_token() -> str:
    """A fresh random bearer token (256 bits, URL-safe)."""
    return secrets.token_urlsafe(32)


def bearer_of(header: str | None) -> bytes | None:
    """The token of an ``Authorization: Bearer <token>`` header, if that is what it is."""
    if not header:
        return None
    scheme, _, token = header.strip().partition(" ")
    token = token.strip()
    if scheme.lower() != "bearer" or not token:
        return None
    return token.encode("utf-8", "surrogateescape")


class Tokens:
    """A set of accepted tokens; ``matches`` looks at every one so timing reveals nothing."""

    def __init__(self, tokens: Iterable[str]) -> None:
        self._tokens = tuple(t.encode("utf-8") for t in tokens)

    def __bool__(self) -> bool:
        return bool(self._tokens)

    def matches(self, header: str | None) -> bool:
        """Whether the header carries one of the tokens (constant time over all of them)."""
        given = bearer_of(header)
        if given is None:
            return False
        found = False
        for token in self._tokens:
            found |= hmac.compare_digest(given, token)
        return found


class ProviderAuth:
    """Who may call the provider endpoint, and who may call the admin API."""

    def __init__(self, tokens: Tokens, admin: Tokens, *, insecure: bool = False) -> None:
        self.tokens = tokens
        self.admin = admin
        self.insecure = insecure

    def check(self, header: str | None) -> None:
        """Allow a provider call.

        Raises:
            Unauthorized: missing or wrong token (and not running insecure).
        """
        if self.insecure or self.tokens.matches(header):
            return
        if bearer_of(header) is None:
            raise Unauthorized("missing bearer token: send 'Authorization: Bearer <token>'")
        raise Unauthorized("wrong bearer token")

    def check_admin(self, header: str | None) -> None:
        """Allow an admin call: only admin tokens, even when running insecure.

        Raises:
            Unauthorized: missing or unknown token, or no admin tokens configured.
            Forbidden: a provider token, which cannot reach the admin API.
        """
        if not self.admin:
            raise Unauthorized("the admin API is off: configure SEMMEM_ADMIN_TOKENS")
        if self.admin.matches(header):
            return
        if self.tokens.matches(header):
            raise Forbidden("this token cannot use the admin API; use an admin token")
        if bearer_of(header) is None:
            raise Unauthorized("missing bearer token: send 'Authorization: Bearer <token>'")
        raise Unauthorized("wrong admin token")
