"""``semmem serve``: checks the security settings, then runs the app under uvicorn."""

from __future__ import annotations

import logging
import socket
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, TextIO

from semmem.embedding.embedder import Embedder
from semmem.errors import InvalidInput, SemmemError
from semmem.protocol.declaration import check_path
from semmem.serving.auth import check_lengths, load_tokens
from semmem.settings import Settings
from semmem.store import quiet_engine_logs
from semmem.store.modes import check_data_dir, check_default_dir, owner_only
from semmem.store.upkeep.scratch import private_temp
from semmem.web.net import is_loopback
from semmem.web.tokenfile import GENERATED_TOKEN_FILE, KeptToken, found

if TYPE_CHECKING:
    from semmem.serving.runtime import Runtime

__all__ = ["GENERATED_TOKEN_FILE", "plan", "prepare", "serve"]
STARTUP_FAILURE = 3  # uvicorn's exit status when it could not start (a port taken)


def plan(settings: Settings, out: TextIO) -> tuple[Settings, KeptToken | None]:
    """Settings ready to serve, decided by checking and reading only: path checked,
    ``--insecure`` only on loopback, tokens long enough, a token to require — and what is to
    be done with the generated token's file once the server holds its port and its store.

    Without any configured token (and not insecure) the server needs one of its own: the token
    kept in ``<data>/generated-token`` (the working directory for a remote store) by an earlier
    start is reused, so hosts set up with it keep working across restarts; the first such start
    generates it and (once serving) writes it there, a file only its owner can read (one that
    is not — another owner, readable by others, a link — is replaced). It is the only token the
    server accepts. On a terminal it is also printed; elsewhere (Docker, systemd: ``out`` is a
    log others may read) ``out`` only says where it is. Once tokens are configured, a file left
    by an earlier start is removed (its token is no longer accepted) unless a running server
    still serves it (``semmem.web.tokenfile``).

    Raises:
        InvalidInput: ``--insecure`` on a non-loopback host, a bad path or tokens file, a
            token shorter than ``MIN_TOKEN_BYTES``.
    """
    check_path(settings.path)
    if settings.default_data:
        check_default_dir(settings.data)  # before anything is written there
    check_data_dir(settings.data)  # the generated token's file is kept there
    check_lengths(settings.tokens, settings.tokens_file, "SEMMEM_TOKENS")
    check_lengths(settings.admin_tokens, settings.admin_tokens_file, "SEMMEM_ADMIN_TOKENS")
    if settings.insecure:
        if not is_loopback(settings.host):
            raise InvalidInput(
                f"--insecure serves without authentication and is only allowed on a loopback "
                f"host (127.0.0.1, ::1, localhost), not {settings.host!r}"
            )
        return settings, None
    configured = bool(load_tokens(settings.tokens, settings.tokens_file))
    kept = found(settings.data, configured=configured, say=_teller(settings, out), out=out)
    if kept.token is None:
        return settings, kept
    return settings.model_copy(update={"tokens": kept.token, "tokens_file": None}), kept


def prepare(settings: Settings, out: TextIO) -> Settings:
    """``plan``, then at once what the server does once serving with the generated token's
    file (for a caller that serves nothing itself)."""
    settings, kept = plan(settings, out)
    if kept is not None:
        kept.settle()
        kept.release()
    return settings


def _teller(settings: Settings, out: TextIO) -> Callable[[str], None]:
    """How ``prepare`` tells the operator something: a line on ``out``, or with
    ``SEMMEM_LOG_FORMAT=json`` a warning in the log, so every line a collector reads is JSON."""
    if settings.log_format != "json":
        return lambda line: print(line, file=out)
    return logging.getLogger("semmem.serve").warning


def serve(settings: Settings, *, embedder: Embedder | None = None,
          out: TextIO | None = None) -> None:
    """Serve the provider on ``settings.host:settings.port`` until interrupted."""
    import uvicorn

    from semmem.serving import logs, otel
    from semmem.web import heads
    from semmem.web.accesslog import AccessLog
    from semmem.web.app import create_app
    from semmem.web.requestid import RequestIds

    quiet_engine_logs()  # before the store loads the engine
    logs.configure(settings.log_level, settings.log_format)  # prepare's warnings in this form
    settings, kept = plan(settings, out or sys.stdout)
    if embedder is None:
        from semmem.embedding.choice import check_model

        # fail now, not after the port opened, if the model is broken
        check_model(settings.model, settings.encoder)
    tracer = otel.setup()  # None unless OTEL_* configure tracing
    api = create_app(settings, embedder=embedder)
    # Request ids outermost: the access line carries the request's id and trace.
    app = RequestIds(AccessLog(api))
    # access_log=False: uvicorn's line shows the query string (admin partitions); ours doesn't.
    # Heads: at most 16 KiB, within SEMMEM_HEAD_TIMEOUT_S (web/heads.py); a body has
    # SEMMEM_BODY_TIMEOUT_S (web/bodies.py), read before a concurrency slot is taken.
    sockets: list[socket.socket] = []
    try:
        # The port first: a start that cannot have it has written, removed, made nothing yet.
        sockets = listen(settings.host, settings.port)
        with owner_only(settings.data, default_dir=settings.default_data), \
                private_temp(settings.data):  # the engine's spill files: removed if left by a kill
            # log_config=None: uvicorn's own lines go through the root handler (logs.OneLine)
            server = uvicorn.Server(uvicorn.Config(
                app, host=settings.host, port=settings.port,
                log_level=settings.log_level.lower(), log_config=None,
                server_header=False, proxy_headers=False, timeout_graceful_shutdown=5,
                access_log=False, http=heads.protocol(settings.head_timeout_s),
            ))
            runtime: Runtime = api.state.runtime
            fatal: list[SemmemError] = []

            def stop(exc: SemmemError) -> None:
                # A server that can never serve must not stay up saying it is alive: a
                # supervisor sees the exit, the operator the one line with the fix.
                fatal.append(exc)
                server.should_exit = True

            runtime.on_fatal = stop
            if kept is not None:
                runtime.on_ready = kept.settle  # the port and the store held: the token's file
            server.run(sockets=sockets)
            if fatal:
                raise fatal[0]
            if not server.started:
                sys.exit(STARTUP_FAILURE)
    finally:
        for sock in sockets:
            sock.close()
        if kept is not None:
            kept.release()
        if tracer is not None:
            tracer.shutdown()


def listen(host: str, port: int, backlog: int = 2048) -> list[socket.socket]:
    """Listening sockets on every address of ``host`` (as asyncio's ``create_server`` binds
    them); a port already in use ends the process with uvicorn's line and status 3."""
    infos = socket.getaddrinfo(host or None, port, type=socket.SOCK_STREAM,
                               flags=socket.AI_PASSIVE)
    sockets: list[socket.socket] = []
    for family, kind, proto, _, address in dict.fromkeys(infos):
        sock = socket.socket(family, kind, proto)
        sockets.append(sock)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        if family == socket.AF_INET6:
            sock.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 1)
        try:
            sock.bind(address)
            sock.listen(backlog)
        except OSError as exc:
            for opened in sockets:
                opened.close()
            logging.getLogger("uvicorn.error").error(
                "[Errno %s] error while attempting to bind on address %r: %s",
                exc.errno, address, (exc.strerror or str(exc)).lower())
            sys.exit(STARTUP_FAILURE)
    shown = f"[{host}]" if ":" in host else host
    logging.getLogger("uvicorn.error").info(
        "Uvicorn running on http://%s:%d (Press CTRL+C to quit)", shown,
        sockets[0].getsockname()[1])
    return sockets
