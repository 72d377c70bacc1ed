"""``POST /store`` answers as LangGraph's own stores do, on a real ``semmem serve`` process (fake
embedder): a batch answers its reads against the store as it found it, then applies its writes
(the last of a key winning); a limit of 0 answers nothing and a depth of 0 the empty
namespace; a non-finite filter operand (``{"$float": …}``, JSON having none) equals no stored
value and never a string; a namespace label holding a control character is refused at the door
(issue 54, section 6)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from tests.support.server import JSON, TOKEN, ServerProcess, served_with_tokens_file
from tests.support.web import assert_error, send


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    with served_with_tokens_file(tmp_path_factory.mktemp("lg-semantics")) as process:
        yield process


@pytest.fixture
def c(server: ServerProcess) -> Iterator[httpx.Client]:
    with server.client() as client:
        yield client


def store(c: httpx.Client, *ops: dict[str, Any]) -> httpx.Response:
    return send(c, {"ops": list(ops)}, {"Authorization": f"Bearer {TOKEN}", **JSON},
                path="/store")


def results(c: httpx.Client, *ops: dict[str, Any]) -> list[Any]:
    r = store(c, *ops)
    assert r.status_code == 200, r.text
    found: list[Any] = r.json()["results"]
    return found


def put(ns: list[str], key: str, value: Any, **extra: Any) -> dict[str, Any]:
    return {"op": "put", "namespace": ns, "key": key, "value": value, **extra}


def get(ns: list[str], key: str) -> dict[str, Any]:
    return {"op": "get", "namespace": ns, "key": key}


def search(prefix: list[str], **extra: Any) -> dict[str, Any]:
    return {"op": "search", "prefix": prefix, "limit": 100, **extra}


def value(found: dict[str, Any] | None) -> Any:
    return None if found is None else found["value"]


def test_a_non_finite_operand_equals_no_value_and_never_a_string(c: httpx.Client) -> None:
    ns = ["finite", "u1"]
    results(c, *(put(ns, key, {"x": x}) for key, x in (
        ("str-inf", "inf"), ("str-nan", "nan"), ("five", 5), ("str-minus-inf", "-inf"))))

    def keys(filter: dict[str, Any]) -> list[str]:
        return sorted(f["key"] for f in results(c, search(ns, filter=filter))[0])

    inf, nan = {"$float": "inf"}, {"$float": "nan"}
    assert keys({"x": "inf"}) == ["str-inf"]  # a string operand: the positive control
    assert keys({"x": inf}) == [] and keys({"x": {"$eq": nan}}) == []
    assert keys({"x": {"$eq": {"$float": "-inf"}}}) == []
    assert keys({"x": {"$ne": nan}}) == ["five", "str-inf", "str-minus-inf", "str-nan"]
    # comparisons read a string value as a number, as LangGraph's float() does
    assert keys({"x": {"$lt": inf}}) == ["five", "str-minus-inf"]
    assert keys({"x": {"$gt": {"$float": "-inf"}}}) == ["five", "str-inf"]
    for bad in ({"x": {"$float": "Infinity"}}, {"x": {"$float": "inf", "y": 1}},
                {"$float": "inf"}):
        assert_error(store(c, search(ns, filter=bad)), 422, "invalid_arguments")
