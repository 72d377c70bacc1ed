"""``semmem serve``: checks the security settings, then runs the app under uvicorn."""

from __future__ import annotations

import sys
from typing import TextIO

from semmem.embedding.embedder import Embedder
from semmem.errors import InvalidInput
from semmem.protocol.declaration import check_path
from semmem.serving.auth import generate_token, load_tokens
from semmem.settings import Settings
from semmem.store import quiet_engine_logs
from semmem.store.scratch import private_temp
from semmem.web.net import is_loopback


def prepare(settings: Settings, out: TextIO) -> Settings:
    """Settings ready to serve: path checked, ``--insecure`` only on loopback, a token to require.

    Without any configured token (and not insecure) a random token is generated and printed to
    ``out`` once; it is the only token the server accepts.

    Raises:
        InvalidInput: ``--insecure`` on a non-loopback host, a bad path or tokens file.
    """
    check_path(settings.path)
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
    out.write(
        "semmem: no token configured (SEMMEM_TOKENS / SEMMEM_TOKENS_FILE); generated one.\n"
        f"semmem: bearer token (shown only now): {token}\n"
    )
    out.flush()
    return settings.model_copy(update={"tokens": token, "tokens_file": None})


def serve(settings: Settings, *, embedder: Embedder | None = None,
          out: TextIO | None = None) -> None:
    """Serve the provider on ``settings.host:settings.port`` until interrupted."""
    import uvicorn

    from semmem.serving import logs, otel
    from semmem.web.accesslog import AccessLog
    from semmem.web.app import create_app
    from semmem.web.requestid import RequestIds

    quiet_engine_logs()  # before the store loads the engine
    settings = prepare(settings, out or sys.stdout)
    if embedder is None:
        from semmem.embedding.choice import check_model

        # fail now, not after the port opened, if the model is broken
        check_model(settings.model, settings.encoder)
    logs.configure(settings.log_level, settings.log_format)
    tracer = otel.setup()  # None unless OTEL_* configure tracing
    # Request ids outermost: the access line carries the request's id and trace.
    app = RequestIds(AccessLog(create_app(settings, embedder=embedder)))
    # JSON: uvicorn's own lines go through the root handler too (no config of its own).
    log_config = None if settings.log_format == "json" else uvicorn.config.LOGGING_CONFIG
    # access_log=False: uvicorn's line shows the query string (admin partitions); ours doesn't.
    try:
        with private_temp(settings.data):  # the engine's spill files: removed if left by a kill
            uvicorn.run(
                app, host=settings.host, port=settings.port,
                log_level=settings.log_level.lower(), log_config=log_config,
                server_header=False, proxy_headers=False, timeout_graceful_shutdown=5,
                access_log=False,
            )
    finally:
        if tracer is not None:
            tracer.shutdown()
