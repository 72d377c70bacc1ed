"""Bearer tokens: loaded from configuration (the file re-read when it changes), compared in
constant time.

A token line may bind the token to one partition for the MCP endpoint, after the token and
spaces or tabs (the only field separators; lines end at ``\n`` only, and a line holding any
other control or separator character is refused):
``<token> partition=<name> [access=read|read-write]``. A line with the token alone is a
provider token, as before; a bound token is accepted on ``/mcp`` only, where the binding
(not the caller) names the partition. Either may carry a scope, ``scope.<key>=<value>`` (a
string; repeat for more keys): every call with the token sees and edits only the facts
whose metadata has those values, and writes them on its new facts
(``semmem.items.filters.Filter.stamp``). A call takes its token's binding and scope from
one reading of the tokens (``Tokens.identify``), at admission.
"""

from __future__ import annotations

import dataclasses
import hashlib
import hmac
import logging
import os
import re
import secrets
import stat
import threading
import time
import unicodedata
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

from semmem.contract import MAX_PARTITION_BYTES
from semmem.errors import Forbidden, InvalidInput, SemmemError, Unauthorized
from semmem.items.filters import Filter

log = logging.getLogger("semmem.web")

RECHECK_S = 1.0  # how often a tokens file is looked at (one stat) for changes
MIN_TOKEN_BYTES = 16  # `semmem serve` refuses to start with a shorter token configured


@dataclass(frozen=True)
class Binding:
    """What a bound token reaches over MCP: one partition, read-only or read-write."""

    partition: str
    writable: bool
    scope: Filter = dataclasses.field(default_factory=Filter)


@dataclass(frozen=True)
class Identity:
    """One configured token as a call finds it: its digest, binding (MCP) and scope (empty:
    none), all from one reading of the tokens."""

    digest: bytes
    binding: Binding | None
    scope: Filter


Entry = tuple[str, Binding | None, Filter]
_BINDING_FORM = ("after the token, expected 'partition=<name>' and optionally "
                 "'access=read|read-write', and/or 'scope.<key>=<value>' fields")
SCOPE_PREFIX = "scope."


def _scope(pairs: dict[str, str], where: str) -> Filter:
    try:
        return Filter.parse({"metadata": pairs}) if pairs else Filter()
    except SemmemError as exc:
        raise InvalidInput(f"{where}: scope: {exc.message}") from None


# Fields are separated by spaces and tabs only, lines by ``\n`` only (``\r\n`` read as one):
# ``str.split()`` and ``str.splitlines()`` also break on Unicode spaces and line separators,
# which would make one line of a partition name or scope value bind a second token.
_GAPS = re.compile("[ \t]+")
_BLANK = " \t"


def _fields(text: str) -> list[str]:
    """``text`` split on runs of spaces and tabs."""
    return [f for f in _GAPS.split(text.strip(_BLANK)) if f]


def _check_characters(text: str, where: str) -> None:
    """Refuse a line holding a control, format or separator character other than a space or
    a tab (named by code point; the line is never echoed: it holds a token).

    Raises:
        InvalidInput: such a character.
    """
    for char in text:
        if char not in _BLANK and unicodedata.category(char) in ("Cc", "Cf", "Zs", "Zl", "Zp"):
            raise InvalidInput(f"{where}: holds U+{ord(char):04X}, a control or separator "
                               "character; separate the fields with spaces or tabs, and put "
                               "no such character in a token, partition or scope")


def _lines(content: str) -> list[str]:
    """A tokens file's lines: split on ``\n`` alone, one ``\r`` before it dropped (and a byte
    order mark at the start)."""
    lines = content.removeprefix("\ufeff").split("\n")
    return [line.removesuffix("\r") for line in lines]


def _texts(inline: str | None, lines: Iterable[str], item: Callable[[int], str],
           line: Callable[[int], str]) -> list[tuple[str, str]]:
    """(where, text) of every token entry given: the comma-separated inline items, then the
    file's lines that are neither blank nor comments (``item``/``line`` name them by number)."""
    # an inline item's ends may hold line breaks (a variable written over several lines)
    texts = [(item(i + 1), t.strip(_BLANK + "\r\n"))
             for i, t in enumerate((inline or "").split(","))]
    texts.extend((line(i + 1), text) for i, text in enumerate(lines)
                 if not text.lstrip(_BLANK).startswith("#"))
    return [(where, text) for where, text in texts if text.strip(_BLANK)]


def _entry(text: str, where: str) -> Entry:
    _check_characters(text, where)
    token, *fields = _fields(text)
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
    entries = [_entry(t, where) for where, t in _texts(
        inline, lines, lambda i: f"SEMMEM_TOKENS item {i}", lambda i: f"line {i}")]
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
            lines = _lines(Path(file).read_bytes().decode("utf-8"))
        except (OSError, UnicodeDecodeError) as exc:
            why = exc.strerror if isinstance(exc, OSError) else "not UTF-8"
            raise InvalidInput(f"cannot read tokens file {file}: {why}") from None
    return _parse(inline, lines)


def check_lengths(inline: str | None, file: Path | None, what: str) -> None:
    """Refuse tokens shorter than ``MIN_TOKEN_BYTES`` (UTF-8), naming where, never the token.

    Raises:
        InvalidInput: a token is too short, or the file cannot be read.
    """
    lines: list[str] = []
    if file is not None:
        try:
            lines = _lines(Path(file).read_bytes().decode("utf-8"))
        except (OSError, UnicodeDecodeError):
            lines = []  # load_entries says why, when the tokens are loaded
    for where, text in _texts(inline, lines, lambda i: f"item {i} of {what}",
                              lambda i: f"line {i} of {file}"):
        _check_characters(text, f"the token at {where}")
        token = _fields(text)[0]
        if len(token.encode("utf-8")) < MIN_TOKEN_BYTES:
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
        # Every token as one tuple, replaced whole when the file changes: a call reads it
        # once (``identify``), so its token, binding and scope all come from one reading.
        self._known: tuple[Identity, ...] = ()
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
        fixed = [Identity(_digest(t.encode("utf-8")), None, Filter()) for t in self._fixed]
        self._known = (*fixed, *(Identity(_digest(t.encode("utf-8")), binding, scope)
                                 for t, binding, scope in entries))

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
        return any(known.binding is None for known in self._known)

    def identify(self, header: str | None) -> Identity | None:
        """Who the header's token is (its binding and scope), from one reading of the tokens,
        ``None`` for no configured token (constant time over all of them)."""
        self.refresh()
        known = self._known  # one reading: a file re-read meanwhile changes nothing here
        given = bearer_of(header)
        if given is None:
            return None
        digest = _digest(given)
        found: Identity | None = None
        for identity in known:
            if hmac.compare_digest(digest, identity.digest):
                found = identity  # no early exit: every token is compared
        return found

    def matches(self, header: str | None) -> bool:
        """Whether the header carries a provider (unbound) token."""
        identity = self.identify(header)
        return identity is not None and identity.binding is None

    def binding(self, header: str | None) -> Binding | None:
        """The binding of the bound token the header carries, if it is one."""
        identity = self.identify(header)
        return None if identity is None else identity.binding


class ProviderAuth:
    """Who may call the provider endpoint, and who may call the admin API."""

    def __init__(self, tokens: Tokens, admin: Tokens, *, insecure: bool = False) -> None:
        self.tokens = tokens
        self.admin = admin
        self.insecure = insecure

    def check(self, header: str | None) -> Filter | None:
        """Allow a provider call; the scope of its token (``None``: unscoped), read with the
        token itself, so a call keeps the scope it was admitted with (running insecure, a
        call with no configured token is allowed, unscoped).

        Raises:
            Unauthorized: missing or wrong token (and not running insecure).
            Forbidden: a token bound to a partition (an MCP token).
        """
        identity = self.tokens.identify(header)
        if identity is not None and identity.binding is None:
            return None if identity.scope.empty else identity.scope
        if self.insecure:
            return None
        if identity is not None and identity.binding is not None:
            # A valid token, for another door: say which (its partition, never the token).
            raise Forbidden(f"this token is bound to partition {identity.binding.partition!r} "
                            f"for MCP (/mcp) only; the provider endpoint takes a token without "
                            f"a binding")
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
        identity = self.tokens.identify(header)  # one reading: binding and scope together
        if identity is not None and identity.binding is not None:
            return identity.binding
        if identity is not None:
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
