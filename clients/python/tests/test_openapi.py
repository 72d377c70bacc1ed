"""The client's requests and the server's answers to them, checked against the OpenAPI
document the server serves (``GET /openapi.json``), and the client's error classes against
the codes that document lists."""

from __future__ import annotations

from typing import Any

import httpx
import pytest
from jsonschema import Draft202012Validator

from semmem_client import Client, Conflict, NotFound, SemmemError
from semmem_client._errors import BY_CODE

from conftest import PATH
from proxy import Proxy


def _document(url: str) -> dict[str, Any]:
    reply = httpx.get(url + "/openapi.json", timeout=30)  # no token needed
    assert reply.status_code == 200
    doc: dict[str, Any] = reply.json()
    return doc


def _check(doc: dict[str, Any], schema: dict[str, Any], value: Any) -> None:
    validator = Draft202012Validator({**schema, "components": doc["components"]})
    problems = [e.message for e in validator.iter_errors(value)]
    assert not problems, problems


def test_requests_and_answers_match_the_served_document(proxy: Proxy, proxied: Client,
                                                        partition: str) -> None:
    """Every verb, a turn and two refusals: each request body the client sent is one of the
    document's request schemas, each answer the schema of its status."""
    proxied.remember(partition, "Grows tomatoes")
    turn = proxied.turn(partition, None, max_bytes=512)
    turn.search("tomatoes", limit=3)
    turn.update(1, "Grows tomatoes and basil")
    with pytest.raises(Conflict):
        turn.forget(1)
    with pytest.raises(NotFound):
        proxied.forget(partition, 5)
    proxied.remember(partition, "Grows basil and tomatoes")  # a write with similar facts
    proxied.forget(partition, 1)

    doc = _document(proxy.upstream)
    post = doc["paths"][PATH]["post"]
    request_schema = post["requestBody"]["content"]["application/json"]["schema"]
    attempts = proxy.posts()
    assert {a.json()["operation"] for a in attempts} == {"recall", "tool"}
    assert {a.json().get("tool") for a in attempts} >= {"search", "remember", "update", "forget"}
    assert {a.status for a in attempts} == {200, 404, 409}
    for attempt in attempts:
        _check(doc, request_schema, attempt.json())
        answer = post["responses"][str(attempt.status)]["content"]["application/json"]
        _check(doc, answer["schema"], httpx.Response(200, content=attempt.answer).json())


def test_every_documented_error_code_has_its_class(proxy: Proxy) -> None:
    """Each code the document says a status carries maps to a class raised for it."""
    doc = _document(proxy.upstream)
    responses = doc["paths"][PATH]["post"]["responses"]
    documented = {(code, int(status)) for status, entry in responses.items() if status != "200"
                  for code in entry["content"]["application/json"]["schema"]["properties"]
                  ["error"]["properties"]["code"]["enum"]}
    assert {code for code, _ in documented} <= set(BY_CODE)
    for code, _status in documented:
        cls = BY_CODE[code]
        assert issubclass(cls, SemmemError) and cls.code == code


def test_readme_error_table_lists_every_exported_error() -> None:
    """The client README's error table has one row per exported ``SemmemError`` class, with
    that class's code."""
    import re
    from pathlib import Path

    import semmem_client

    exported = {name: getattr(semmem_client, name) for name in semmem_client.__all__}
    errors = {name: cls.code for name, cls in exported.items()
              if isinstance(cls, type) and issubclass(cls, SemmemError)}
    readme = (Path(__file__).resolve().parents[1] / "README.md").read_text(encoding="utf-8")
    rows = dict(re.findall(r"^\| `(\w+)`(?: \([^)]*\))? \| `(\w+)` \|", readme, re.M))
    assert len(errors) > 15 and "ClientClosed" in errors
    assert {n: c for n, c in rows.items() if n in errors or n.endswith("Error")} == {
        n: c for n, c in errors.items() if n != "SemmemError"}
