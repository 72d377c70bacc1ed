"""The server's log lines: plain text (the default) or, with ``SEMMEM_LOG_FORMAT=json``, one
JSON object per line — ``time``, ``level``, ``logger``, ``message``, ``request_id``,
``trace_id`` (and ``exception``, a traceback, when there is one).

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
            line["exception"] = self.formatException(record.exc_info)
        return json.dumps(line, ensure_ascii=False)


def configure(level: str, form: str) -> None:
    """The root logger's handler in ``form`` (``text`` or ``json``), on stderr."""
    if form == "json":
        handler = logging.StreamHandler()
        handler.setFormatter(JsonFormatter())
        logging.basicConfig(level=level.upper(), handlers=[handler], force=True)
    else:
        logging.basicConfig(level=level.upper(), format=TEXT_FORMAT)
