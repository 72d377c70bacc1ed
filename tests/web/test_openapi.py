"""Hostile input, part 1: schemathesis on the OpenAPI document of the API, against a real
server process.

The provider endpoint's document is ``semmem.web.openapi.provider_openapi`` (built from the
tool definitions); the admin and ops endpoints come from FastAPI's own description of the app
(the app serves the whole at ``GET /openapi.json``). Positive and negative cases, a fixed
example budget; every response must be a documented status with a body matching its schema
(a result or the error envelope), never a 5xx, and no response may carry a fact of the one
partition the fuzzer never names.
"""

from __future__ import annotations

import re
import uuid
import zlib
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

schemathesis = pytest.importorskip("schemathesis")

from schemathesis.checks import not_a_server_error  # noqa: E402
from schemathesis.specs.openapi.checks import (  # noqa: E402
    content_type_conformance,
    negative_data_rejection,
    response_headers_conformance,
    response_schema_conformance,
    status_code_conformance,
)

from semmem.embedding.fakes import HashingEmbedder  # noqa: E402
from semmem.web.app import create_app  # noqa: E402
from semmem.web.openapi import api_openapi  # noqa: E402
from tests.support.server import ADMIN, AUTH, ServerProcess, iso_in  # noqa: E402
from tests.support.web import send, settings_for, tool  # noqa: E402

EXAMPLES = 120  # per operation and mode; the whole module stays well under a minute
SECRET_PARTITION = "fuzz-secret-partition"
SECRET = f"secret{uuid.uuid4().hex}"
DATETIME = re.compile(r"\d{4}-\d{2}-\d{2}[Tt]\d{2}:\d{2}:\d{2}(\.\d+)?([Zz]|[+-]\d{2}:\d{2})")


def api_document() -> dict[str, Any]:
    """The whole API's OpenAPI document, from an app like the server's."""
    return api_openapi(create_app(settings_for(Path("unused")), embedder=HashingEmbedder()))


schema = schemathesis.openapi.from_dict(api_document())
schema.config.generation.update(modes=["positive", "negative"], max_examples=EXAMPLES,
                                deterministic=True, database="none",
                                # unknown query parameters are ignored, like unknown envelope
                                # fields: not a schema violation to refuse
                                allow_extra_parameters=False)
SEEN: Counter[int] = Counter()  # statuses of the provider endpoint's answers
CHECKS = [not_a_server_error, status_code_conformance, content_type_conformance,
          response_headers_conformance, response_schema_conformance, negative_data_rejection]


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    """A real server with one partition the fuzzer never names, holding a secret."""
    proc = ServerProcess(tmp_path_factory.mktemp("fuzz") / "db",
                         env={"SEMMEM_MAX_CONCURRENCY": "64"}).start()
    try:
        proc.wait_ready()
        with proc.client() as c:
            r = send(c, tool("remember", {"text": f"The vault code is {SECRET}"},
                             partition=SECRET_PARTITION))
            assert r.status_code == 200, r.text
        yield proc
    finally:
        proc.stop()


def _live_deadline(case: Any) -> None:
    """Most cases get a deadline in the future, so they reach past the deadline check."""
    body = case.body
    if not isinstance(body, dict) or not isinstance(body.get("deadlineAt"), str):
        return
    if DATETIME.fullmatch(body["deadlineAt"]) and zlib.crc32(repr(body).encode()) % 4:
        body["deadlineAt"] = iso_in(60)


@schema.parametrize()
def test_api_fuzz_answers_conform(case: Any, server: ServerProcess) -> None:
    """Every generated request is answered with a documented status and a conforming body."""
    _live_deadline(case)
    headers = ADMIN if case.path.startswith("/admin") else AUTH
    response = case.call_and_validate(base_url=server.url, headers=headers, checks=CHECKS,
                                      timeout=30)
    assert response.status_code < 500, response.text
    assert SECRET not in response.text
    if case.path == "/memory":
        SEEN[response.status_code] += 1


def test_api_fuzz_reached_the_core() -> None:
    """The provider cases were not all refused at the door: some were served, some refused
    at each layer (envelope, arguments, core)."""
    if not SEEN:
        pytest.skip("run with the fuzz test above")
    print("provider statuses:", dict(sorted(SEEN.items())))
    assert SEEN[200] >= 10, SEEN
    assert {400, 422} <= set(SEEN), SEEN
