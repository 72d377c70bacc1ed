"""``semmem serve``: checks the security settings, then runs the app under uvicorn."""

from __future__ import annotations

import logging
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TextIO

from semmem.embedding.embedder import Embedder
from semmem.errors import InvalidInput
from semmem.protocol.declaration import check_path
from semmem.serving.auth import check_lengths, generate_token, load_tokens
from semmem.settings import Settings
from semmem.store import quiet_engine_logs
from semmem.store.modes import check_default_dir, local_path, owner_only
from semmem.store.upkeep.scratch import private_temp
from semmem.web.net import is_loopback

GENERATED_TOKEN_FILE = "generated-token"  # in the store directory, or the working directory


def prepare(settings: Settings, out: TextIO) -> Settings:
    """Settings ready to serve: path checked, ``--insecure`` only on loopback, tokens long
    enough, a token to require.

    Without any configured token (and not insecure) a random token is generated; it is the
    only token the server accepts. It is shown on ``out`` only when that is a terminal; else
    (under Docker or systemd, ``out`` is a log others may read) it is written to a file only
    its owner can read, and ``out`` says where.

    Raises:
        InvalidInput: ``--insecure`` on a non-loopback host, a bad path or tokens file, a
            token shorter than ``MIN_TOKEN_BYTES``.
    """
    check_path(settings.path)
    if settings.default_data:
        check_default_dir(settings.data)  # before anything is written there
    check_lengths(settings.tokens, settings.tokens_file, "SEMMEM_TOKENS")
    check_lengths(settings.admin_tokens, settings.admin_tokens_file, "SEMMEM_ADMIN_TOKENS")
    if settings.insecure:
        if not is_loopback(settings.host):
            raise InvalidInput(
                f"--insecure serves without authentication and is only allowed on a loopback "
                f"host (127.0.0.1, ::1, localhost), not {settings.host!r}"
            )
        return settings
    if load_tokens(settings.tokens, settings.tokens_file):
        return settings
    token = generate_token()
    say = _teller(settings, out)
    say("semmem: no token configured (SEMMEM_TOKENS / SEMMEM_TOKENS_FILE); generated one.")
    if out.isatty():
        say(f"semmem: bearer token (shown only now): {token}")
    else:
        where = _write_private(settings.data, token)
        say(f"semmem: no terminal attached, so the bearer token is not printed; it is in "
            f"{where} (readable by this user only)")
    out.flush()
    return settings.model_copy(update={"tokens": token, "tokens_file": None})


def _teller(settings: Settings, out: TextIO) -> Callable[[str], None]:
    """How ``prepare`` tells the operator something: a line on ``out``, or with
    ``SEMMEM_LOG_FORMAT=json`` a warning in the log, so every line a collector reads is JSON."""
    if settings.log_format != "json":
        return lambda line: print(line, file=out)
    return logging.getLogger("semmem.serve").warning


def _write_private(uri: str, token: str) -> Path:
    """Write the generated token to a 0600 file beside a local store (else in the working
    directory); its path."""
    folder = local_path(uri) or Path.cwd()
    folder.mkdir(parents=True, exist_ok=True, mode=0o700)
    path = folder / GENERATED_TOKEN_FILE
    path.unlink(missing_ok=True)  # a file planted there (or a link) is not written through
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as fh:
        fh.write(token + "\n")
    return path


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
    settings = prepare(settings, out or sys.stdout)
    if embedder is None:
        from semmem.embedding.choice import check_model

        # fail now, not after the port opened, if the model is broken
        check_model(settings.model, settings.encoder)
    tracer = otel.setup()  # None unless OTEL_* configure tracing
    # Request ids outermost: the access line carries the request's id and trace.
    app = RequestIds(AccessLog(create_app(settings, embedder=embedder)))
    # access_log=False: uvicorn's line shows the query string (admin partitions); ours doesn't.
    # Heads: at most 16 KiB, within SEMMEM_HEAD_TIMEOUT_S (web/heads.py); a body has
    # SEMMEM_BODY_TIMEOUT_S (web/bodies.py), read before a concurrency slot is taken.
    try:
        with owner_only(settings.data, default_dir=settings.default_data), \
                private_temp(settings.data):  # the engine's spill files: removed if left by a kill
            # log_config=None: uvicorn's own lines go through the root handler (logs.OneLine)
            uvicorn.run(
                app, host=settings.host, port=settings.port,
                log_level=settings.log_level.lower(), log_config=None,
                server_header=False, proxy_headers=False, timeout_graceful_shutdown=5,
                access_log=False, http=heads.protocol(settings.head_timeout_s),
            )
    finally:
        if tracer is not None:
            tracer.shutdown()
