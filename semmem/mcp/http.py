"""``/mcp`` on ``semmem serve``: the SDK's streamable-HTTP transport behind semmem's bearer auth.

A raw ASGI app, so this package needs no web framework: it checks the token (its binding
names the partition and access), refuses bodies over 64 KiB, then hands the request to the
SDK's session manager. ``run()`` belongs in the app's lifespan.
"""

from __future__ import annotations

import hashlib
from collections.abc import Awaitable, Callable, MutableMapping
from contextlib import AbstractAsyncContextManager
from typing import Any

from mcp.server import ServerRequestContext
from mcp.server.auth.middleware.bearer_auth import AuthenticatedUser
from mcp.server.auth.provider import AccessToken
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from mcp.server.transport_security import TransportSecuritySettings
from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS, MODERN_PROTOCOL_VERSIONS

from semmem.contract import MAX_BODY
from semmem.errors import Overloaded, SemmemError, Unavailable
from semmem.mcp.server import build_server, default_partition
from semmem.mcp.service import Caller, Service
from semmem.protocol.status import envelope, retry_after, status_of
from semmem.serving.auth import bearer_of
from semmem.serving.runtime import Runtime

Scope = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[MutableMapping[str, Any]]]
Send = Callable[[MutableMapping[str, Any]], Awaitable[None]]

BINDING_KEY = "semmem.caller"  # where the checked caller rides in the ASGI scope
SESSION_HEADER = "mcp-session-id"


def _header(scope: Scope, name: bytes) -> str | None:
    for key, value in scope.get("headers", ()):
        if key.lower() == name:
            return bytes(value).decode("latin-1")
    return None


def caller_of(ctx: ServerRequestContext[Any]) -> Caller:
    """The caller the auth check put in the request's scope, with the MCP session if any."""
    request = ctx.request
    if request is None or not isinstance(request.scope.get(BINDING_KEY), Caller):
        raise Unavailable("no authenticated caller on this request")
    caller: Caller = request.scope[BINDING_KEY]
    if ctx.protocol_version in MODERN_PROTOCOL_VERSIONS:
        return caller  # no sessions in this era: a session header here was checked by no one
    # The SDK answered 404 unless this session exists and was opened with this very token.
    session = request.headers.get(SESSION_HEADER)
    if not session:
        return caller
    return Caller(caller.partition, caller.writable, session, caller.principal, caller.scope)


class McpEndpoint:
    """The ASGI app mounted at ``/mcp``."""

    def __init__(self, runtime: Runtime) -> None:
        settings = runtime.settings
        self.runtime = runtime
        self.service = Service(runtime, max_bytes=settings.mcp_max_bytes)
        # Looked up only when used: a container user may have no name.
        self.insecure_partition = default_partition(settings) if settings.insecure else ""
        security = None
        if settings.insecure:
            # Without a token to stop them, a web page could reach a loopback server through
            # DNS rebinding: accept only loopback Host and Origin headers (as the SDK's default
            # for a loopback server). With tokens, a proxy may front it under any host name.
            security = TransportSecuritySettings(
                enable_dns_rebinding_protection=True,
                allowed_hosts=["127.0.0.1:*", "localhost:*", "[::1]:*"],
                allowed_origins=["http://127.0.0.1:*", "http://localhost:*", "http://[::1]:*"],
            )
        self.security = security
        self.server = build_server(self.service, caller_of)
        self.manager: StreamableHTTPSessionManager | None = None
        self.sessions_per_token = settings.mcp_sessions_per_token
        self._opening: dict[str, int] = {}  # principal → new-session requests being served

    def run(self) -> AbstractAsyncContextManager[None]:
        """A session manager's lifetime (enter it in the app's lifespan).

        A manager runs only once, so each lifespan (an app may be started again) gets its own.
        """
        self.manager = StreamableHTTPSessionManager(
            app=self.server, json_response=True, security_settings=self.security,
            max_request_body_size=MAX_BODY,
            session_idle_timeout=self.runtime.settings.mcp_session_idle_s,
        )
        return self.manager.run()

    def open_sessions(self, principal: str) -> int:
        """How many MCP sessions the token with digest ``principal`` has open now."""
        manager = self.manager
        if manager is None:
            return 0
        if not principal:  # insecure: no credential, every session is the one user's
            return len(manager._server_instances)
        # The SDK records who opened each session (to serve it to that credential only);
        # tests/mcp/test_sessions.py pins this reading of it.
        return sum(1 for owner in manager._session_owners.values()
                   if owner.get("client_id") == principal)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            return
        if self.manager is None:
            await _refuse(send, Unavailable("MCP is not running; retry shortly"))
            return
        header = _header(scope, b"authorization")
        try:
            binding = self.runtime.auth.check_mcp(header)
            self.runtime.limit(header, "mcp")
        except SemmemError as exc:
            await _refuse(send, exc)
            return
        if binding is None:  # insecure (loopback only): the configured partition, read-write
            caller = Caller(self.insecure_partition, True)
        else:
            # The SDK then serves a session only to the credential that opened it.
            token = bearer_of(header) or b""
            principal = hashlib.sha256(token).hexdigest()
            caller = Caller(binding.partition, binding.writable, principal=principal,
                            scope=None if binding.scope.empty else binding.scope)
            scope["user"] = AuthenticatedUser(AccessToken(token="", client_id=principal,
                                                          scopes=[]))
        scope[BINDING_KEY] = caller
        if not _opens_session(scope):
            await self.manager.handle_request(scope, receive, send)
            return
        # A new session: within this token's cap, counting the openings still being served.
        who = caller.principal
        if self.open_sessions(who) + self._opening.get(who, 0) >= self.sessions_per_token:
            await _refuse(send, Overloaded(
                f"this token already has {self.sessions_per_token} MCP sessions open (the "
                f"limit per token); end one (HTTP DELETE) or let one idle out, then retry",
                {"limit": self.sessions_per_token}))
            return
        self._opening[who] = self._opening.get(who, 0) + 1
        try:
            await self.manager.handle_request(scope, receive, send)
        finally:
            self._opening[who] -= 1
            if not self._opening[who]:
                del self._opening[who]


def _opens_session(scope: Scope) -> bool:
    """Whether the SDK would open a stateful session for this request: a POST without a
    session id, in a protocol era that has sessions (the handshake versions, or none named)."""
    if scope.get("method") != "POST" or _header(scope, SESSION_HEADER.encode()) is not None:
        return False
    version = _header(scope, b"mcp-protocol-version")
    return version is None or version in HANDSHAKE_PROTOCOL_VERSIONS


async def _refuse(send: Send, exc: SemmemError) -> None:
    status = status_of(exc)
    headers = [(b"content-type", b"application/json")]
    wait = retry_after(exc)
    if wait is not None:
        headers.append((b"retry-after", str(wait).encode()))
    if status == 401:
        headers.append((b"www-authenticate", b'Bearer realm="semmem"'))
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": envelope(exc.code, exc.message)})
