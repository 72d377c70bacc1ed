"""Log lines: every record through the root handler's escaping, in either format."""

from __future__ import annotations

import io
import json
import logging

import pytest

from semmem.serving.logs import TEXT_FORMAT, JsonFormatter, OneLine


def _logged(form: str, emit: object) -> str:
    """What one handler as ``configure`` builds it writes for the records ``emit`` logs."""
    out = io.StringIO()
    handler = logging.StreamHandler(out)
    handler.setFormatter(JsonFormatter() if form == "json" else logging.Formatter(TEXT_FORMAT))
    handler.addFilter(OneLine())
    logger = logging.getLogger(f"tests.logs.{form}")
    logger.propagate = False
    logger.setLevel(logging.INFO)
    logger.addHandler(handler)
    try:
        emit(logger)  # type: ignore[operator]
    finally:
        logger.removeHandler(handler)
    return out.getvalue()


@pytest.mark.parametrize("form", ["text", "json"])
def test_a_traceback_quoting_a_caller_keeps_to_its_record(form: str) -> None:
    """An exception whose message holds a caller's LF and NEL: the traceback stays whole,
    but no line of it can pass for a record of its own."""

    def emit(logger: logging.Logger) -> None:
        logger.info("id %s", "a\x85FORGED-ARG")
        try:
            raise ValueError("bad id\nFORGED-LF\x85FORGED-NEL\u2028FORGED-LS")
        except ValueError:
            logger.exception("lookup failed")

    text = _logged(form, emit)
    assert "FORGED-ARG" in text and "FORGED-LF" in text and "FORGED-LS" in text
    assert all(not line.startswith("FORGED") for line in text.splitlines()), text
    if form == "json":
        records = [json.loads(line) for line in text.splitlines()]
        assert records[0]["message"] == "id a\\x85FORGED-ARG"
        assert "Traceback (most recent call last)" in records[1]["exception"]
    else:
        assert "id a\\x85FORGED-ARG" in text and "Traceback (most recent call last)" in text
