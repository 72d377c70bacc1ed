"""Bearer tokens: loaded from configuration (the file re-read when it changes), compared in
constant time.

A token line may bind the token to one partition for the MCP endpoint, after the token and
whitespace: ``<token> partition=<name> [access=read|read-write]``. A line with the token alone
is a provider token, as before; a bound token is accepted on ``/mcp`` only, where the binding
(not the caller) names the partition. Either may carry a scope, ``scope.<key>=<value>`` (a
string; repeat for more keys): every call with the token sees and edits only the facts
whose metadata has those values, and writes them on its new facts
(``semmem.scoped.filters.Filter.stamp``).
"""

from __future__ import annotations

import dataclasses
import hashlib
import hmac
import logging
import os
import secrets
import stat
import threading
import time
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from semmem.contract import MAX_PARTITION_BYTES
from semmem.errors import Forbidden, InvalidInput, SemmemError, Unauthorized
from semmem.scoped.filters import Filter

log = logging.getLogger("semmem.web")

RECHECK_S = 1.0  # how often a tokens file is looked at (one stat) for changes
MIN_TOKEN_BYTES = 16  # `semmem serve` refuses to start with a shorter token configured


@dataclass(frozen=True)
class Binding:
    """What a bound token reaches over MCP: one partition, read-only or read-write."""

    partition: str
    writable: bool
    scope: Filter = dataclasses.field(default_factory=Filter)


Entry = tuple[str, Binding | None, Filter]
_BINDING_FORM = ("after the token, expected 'partition=<name>' and optionally "
                 "'access=read|read-write', and/or 'scope.<key>=<value>' fields")
SCOPE_PREFIX = "scope."


def _scope(pairs: dict[str, str], where: str) -> Filter:
    try:
        return Filter.parse({"metadata": pairs}) if pairs else Filter()
    except SemmemError as exc:
        raise InvalidInput(f"{where}: scope: {exc.message}") from None


def _entry(text: str, where: str) -> Entry:
    token, *fields = text.split()
    values: dict[str, str] = {}
    scope: dict[str, str] = {}
    for field in fields:
        key, sep, value = field.partition("=")
        if key.startswith(SCOPE_PREFIX) and sep and value \
                and key[len(SCOPE_PREFIX):] not in scope:
            scope[key[len(SCOPE_PREFIX):]] = value
            continue
        if not sep or not value or key not in ("partition", "access") or key in values:
            raise InvalidInput(f"{where}: {_BINDING_FORM}")  # never echo the line: it has a token
        values[key] = value
    if not values:
        return token, None, _scope(scope, where)
    access = values.get("access", "read-write")
    if "partition" not in values or access not in ("read", "read-write"):
        raise InvalidInput(f"{where}: {_BINDING_FORM}")
    if len(values["partition"].encode("utf-8")) > MAX_PARTITION_BYTES:
        raise InvalidInput(f"{where}: the partition is over {MAX_PARTITION_BYTES} bytes")
    filt = _scope(scope, where)
    return token, Binding(values["partition"], access == "read-write", filt), filt


def _parse(inline: str | None, lines: Iterable[str]) -> tuple[Entry, ...]:
    texts = [(f"SEMMEM_TOKENS item {i + 1}", t) for i, t in enumerate((inline or "").split(","))]
    texts.extend((f"line {i + 1}", line) for i, line in enumerate(lines)
                 if not line.lstrip().startswith("#"))
    entries = [_entry(t.strip(), where) for where, t in texts if t.strip()]
    last = {token: (token, binding, scope) for token, binding, scope in entries}
    return tuple(last.values())  # a token listed twice: its last line wins


def load_entries(inline: str | None, file: Path | None) -> tuple[Entry, ...]:
    """Tokens (with their binding, if any) from a comma-separated string and/or a file (one a
    line; ``#`` starts a comment).

    Raises:
        InvalidInput: the file cannot be read, or a binding is malformed.
    """
    lines: list[str] = []
    if file is not None:
        try:
            lines = Path(file).read_text(encoding="utf-8").splitlines()
        except (OSError, UnicodeDecodeError) as exc:
            why = exc.strerror if isinstance(exc, OSError) else "not UTF-8"
            raise InvalidInput(f"cannot read tokens file {file}: {why}") from None
    return _parse(inline, lines)


def check_lengths(inline: str | None, file: Path | None, what: str) -> None:
    """Refuse tokens shorter than ``MIN_TOKEN_BYTES`` (UTF-8), naming where, never the token.

    Raises:
        InvalidInput: a token is too short, or the file cannot be read.
    """
    texts = [(f"item {i + 1} of {what}", t) for i, t in enumerate((inline or "").split(","))]
    if file is not None:
        try:
            lines = Path(file).read_text(encoding="utf-8").splitlines()
        except (OSError, UnicodeDecodeError):
            lines = []  # load_entries says why, when the tokens are loaded
        texts.extend((f"line {i + 1} of {file}", line) for i, line in enumerate(lines)
                     if not line.lstrip().startswith("#"))
    for where, text in texts:
        token = text.split()[0] if text.split() else ""
        if token and len(token.encode("utf-8")) < MIN_TOKEN_BYTES:
            raise InvalidInput(f"the token at {where} is shorter than {MIN_TOKEN_BYTES} bytes; "
                               f"use a long random one (e.g. `python -c \"import secrets; "
                               f"print(secrets.token_urlsafe(32))\"`)")


def warn_if_shared(file: Path) -> None:
    """Log a warning when a tokens file can be read by its group or by others."""
    try:
        mode = stat.S_IMODE(os.stat(file).st_mode)
    except OSError:
        return
    if mode & 0o077:
        log.warning("tokens file %s can be read by other users (mode %o): chmod 600 it",
                    file, mode)


def load_tokens(inline: str | None, file: Path | None) -> tuple[str, ...]:
    """Every configured token, bound or not (see ``load_entries``)."""
    return tuple(token for token, _, _ in load_entries(inline, file))


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


def _digest(token: bytes) -> bytes:
    # Comparing fixed-length digests keeps even the token's length out of the timing
    # (hmac.compare_digest returns early on a length mismatch).
    return hashlib.sha256(token).digest()


class Tokens:
    """The accepted tokens; ``matches`` looks at every one so timing reveals nothing.

    Built with ``file``, the set is the inline tokens plus the file's, and the file is looked
    at (one ``stat``) at most every ``recheck_s`` seconds: when its modification time, size or
    inode changed, it is read again, so tokens rotate without a restart. A file that can no
    longer be read contributes no token (fail closed: revoking wins over availability) until it
    can be read again; that is logged as an error.
    """

    def __init__(self, tokens: Iterable[str] = (), *, inline: str | None = None,
                 file: Path | None = None, recheck_s: float = RECHECK_S) -> None:
        self._fixed = tuple(tokens)
        self._inline = inline
        self._file = Path(file) if file is not None else None
        self._recheck_s = recheck_s
        self._lock = threading.Lock()
        self._checked = time.monotonic()
        self._signature: tuple[int, int, int] | None = None
        self._digests: tuple[bytes, ...] = ()
        self._bound: tuple[tuple[bytes, Binding], ...] = ()
        self._scoped: tuple[tuple[bytes, Filter], ...] = ()
        if self._file is None:
            self._set(_parse(inline, ()))
        else:
            self._signature = self._stat()
            self._set(load_entries(inline, self._file))  # unreadable at start: refuse to start
            warn_if_shared(self._file)

    @classmethod
    def configured(cls, inline: str | None, file: Path | None,
                   recheck_s: float = RECHECK_S) -> Tokens:
        """The tokens of a ``SEMMEM_*TOKENS`` / ``SEMMEM_*TOKENS_FILE`` pair."""
        return cls(inline=inline, file=file, recheck_s=recheck_s)

    def _set(self, entries: tuple[Entry, ...]) -> None:
        unbound = [t for t, binding, _ in entries if binding is None]
        self._digests = tuple(_digest(t.encode("utf-8")) for t in (*self._fixed, *unbound))
        self._bound = tuple((_digest(t.encode("utf-8")), binding)
                            for t, binding, _ in entries if binding is not None)
        self._scoped = tuple((_digest(t.encode("utf-8")), scope)
                             for t, _, scope in entries if not scope.empty)

    def _stat(self) -> tuple[int, int, int] | None:
        assert self._file is not None
        try:
            st = os.stat(self._file)
        except OSError:
            return None
        return (st.st_mtime_ns, st.st_size, st.st_ino)

    def refresh(self) -> None:
        """Re-read the tokens file if it changed since it was last read."""
        if self._file is None:
            return
        with self._lock:
            now = time.monotonic()
            if now - self._checked < self._recheck_s:
                return
            self._checked = now
            signature = self._stat()
            if signature == self._signature:
                return
            self._signature = signature
            try:
                entries = load_entries(self._inline, self._file)
            except InvalidInput as exc:
                log.error("%s; its tokens are refused until it can be read", exc.message)
                entries = _parse(self._inline, ())
            else:
                log.warning("tokens file %s changed: %d token(s) now accepted",
                            self._file, len(entries) + len(self._fixed))
            self._set(entries)

    def __bool__(self) -> bool:
        self.refresh()
        return bool(self._digests)

    def matches(self, header: str | None) -> bool:
        """Whether the header carries one of the tokens (constant time over all of them)."""
        self.refresh()
        given = bearer_of(header)
        if given is None:
            return False
        digest = _digest(given)
        found = False
        for token in self._digests:
            found |= hmac.compare_digest(digest, token)
        return found


    def scope(self, header: str | None) -> Filter | None:
        """The scope of the token the header carries, if it has one (constant time over every
        scoped token)."""
        self.refresh()
        given = bearer_of(header)
        if given is None:
            return None
        digest = _digest(given)
        found: Filter | None = None
        for token, scope in self._scoped:
            if hmac.compare_digest(digest, token):
                found = scope  # no early exit: every token is compared
        return found

    def binding(self, header: str | None) -> Binding | None:
        """The binding of the bound token the header carries (constant time over all of them)."""
        self.refresh()
        given = bearer_of(header)
        if given is None:
            return None
        digest = _digest(given)
        found: Binding | None = None
        for token, binding in self._bound:
            if hmac.compare_digest(digest, token):
                found = binding  # no early exit: every token is compared
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

    def check_mcp(self, header: str | None) -> Binding | None:
        """The binding of an MCP caller's token; ``None`` when running insecure (no auth).

        Raises:
            Unauthorized: missing or unknown token.
            Forbidden: a provider token without a partition binding.
        """
        if self.insecure:
            return None
        binding = self.tokens.binding(header)
        if binding is not None:
            return binding
        if self.tokens.matches(header):
            raise Forbidden("this token is not bound to a partition, so it cannot use MCP; bind "
                            "one in the tokens file: '<token> partition=<name>'")
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
