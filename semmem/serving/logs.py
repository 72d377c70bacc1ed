"""The server's log lines: plain text (the default) or, with ``SEMMEM_LOG_FORMAT=json``, one
JSON object per line — ``time``, ``level``, ``logger``, ``message``, ``request_id``,
``trace_id`` (and ``exception``, a traceback, when there is one).

Every record reaching the root handler, ours or a library's (uvicorn's, the MCP SDK's, which
log what callers sent), passes ``OneLine`` first: its message has its control characters
escaped (a caller's LF, CR or NEL would otherwise start a forged line), and a traceback keeps
its line breaks but nothing else, its lines after the first indented.

The request id and trace id ride in a context variable set once per HTTP request
(``semmem.web.requestid``); a request's span notes its trace id there, so the access line,
written after the span ended, carries it too.
"""

from __future__ import annotations

import contextvars
import json
import logging
from dataclasses import dataclass
from datetime import UTC, datetime

from semmem import tracing
from semmem.protocol.untrusted import escaped

TEXT_FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"
FIELDS = "semmem_fields"  # a record's extra: a dict the JSON line carries as its own fields


@dataclass
class RequestInfo:
    """What every log line of one request carries."""

    request_id: str
    trace_id: str | None = None


_current: contextvars.ContextVar[RequestInfo | None] = contextvars.ContextVar(
    "semmem_request", default=None)


def begin(info: RequestInfo) -> contextvars.Token[RequestInfo | None]:
    """Make ``info`` the current request's (``end`` with the returned token)."""
    return _current.set(info)


def end(token: contextvars.Token[RequestInfo | None]) -> None:
    """Leave the request ``begin`` entered."""
    _current.reset(token)


def current() -> RequestInfo | None:
    """The request being served, if any."""
    return _current.get()


def note_trace(trace_id: str | None) -> None:
    """Record the trace of the current request's span (for its later lines)."""
    info = _current.get()
    if info is not None and trace_id is not None:
        info.trace_id = trace_id


class OneLine(logging.Filter):
    """Each record made one log line: the message escaped, a traceback's lines indented."""

    def filter(self, record: logging.LogRecord) -> bool:
        """Escape ``record`` in place (once, however many handlers see it); keep it."""
        if getattr(record, "semmem_escaped", False):
            return True
        record.msg = escaped(record.getMessage())
        record.args = None
        if record.exc_info and not record.exc_text:
            record.exc_text = logging.Formatter().formatException(record.exc_info)
        if record.exc_text:
            record.exc_text = _block(record.exc_text)
        if record.stack_info:
            record.stack_info = _block(record.stack_info)
        record.semmem_escaped = True
        return True


def _block(text: str) -> str:
    # An exception's message may quote a caller: at column 0 its own line break could pass
    # for a new record; indented, a continuation line never does.
    return escaped(text, keep="\n").replace("\n", "\n    ")


class JsonFormatter(logging.Formatter):
    """One JSON object per record; the message is escaped by JSON, never raw."""

    def format(self, record: logging.LogRecord) -> str:
        """The record as one line of JSON."""
        info = _current.get()
        at = datetime.fromtimestamp(record.created, UTC)
        line: dict[str, object] = {
            "time": at.strftime("%Y-%m-%dT%H:%M:%S.") + f"{at.microsecond // 1000:03d}Z",
            "level": record.levelname,
            "logger": record.name,
            "message": record.getMessage(),
            "request_id": info.request_id if info is not None else None,
            "trace_id": tracing.trace_id() or (info.trace_id if info is not None else None),
        }
        fields = getattr(record, FIELDS, None)
        if isinstance(fields, dict):
            line.update({k: v for k, v in fields.items() if k not in line})
        if record.exc_info:
            line["exception"] = record.exc_text or self.formatException(record.exc_info)
        return json.dumps(line, ensure_ascii=False)


def configure(level: str, form: str) -> None:
    """The root logger's handler in ``form`` (``text`` or ``json``), on stderr, every record
    escaped by ``OneLine``."""
    handler = logging.StreamHandler()
    handler.setFormatter(JsonFormatter() if form == "json" else logging.Formatter(TEXT_FORMAT))
    handler.addFilter(OneLine())
    logging.basicConfig(level=level.upper(), handlers=[handler], force=form == "json")
