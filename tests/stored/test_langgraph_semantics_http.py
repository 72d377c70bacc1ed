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

from tests.stored.test_store_http import get, put, store
from tests.stored.test_store_http import results as answered
from tests.support.server import served_with_tokens_file
from tests.support.web import assert_error


@pytest.fixture(scope="module")
def c(tmp_path_factory: pytest.TempPathFactory) -> Iterator[httpx.Client]:
    """A client of one real server with the provider's tokens, for the module."""
    with served_with_tokens_file(tmp_path_factory.mktemp("lg-semantics")) as process, \
            process.client() as client:
        yield client


def results(c: httpx.Client, *ops: dict[str, Any]) -> list[Any]:
    return answered(store(c, *ops))


def search(prefix: list[str], **extra: Any) -> dict[str, Any]:
    return {"op": "search", "prefix": prefix, "limit": 100, **extra}


def value(found: dict[str, Any] | None) -> Any:
    return None if found is None else found["value"]


def test_a_batch_answers_its_reads_before_its_writes(c: httpx.Client) -> None:
    ns = ["batch", "u1"]
    results(c, put(ns, "k", {"v": 1}))
    out = results(c, put(ns, "k", {"v": 2}), get(ns, "k"), put(ns, "new", {"v": 9}),
                  get(ns, "new"), search(ns), {"op": "list", "conditions": [
                      {"type": "prefix", "path": ["batch"]}]},
                  put(ns, "k", {"v": 3}), get(ns, "k"))
    assert value(out[1]) == {"v": 1} and value(out[7]) == {"v": 1}  # as the batch found it
    assert out[3] is None and [value(f) for f in out[4]] == [{"v": 1}]
    assert out[5] == [ns]
    assert out[0] == out[6] and out[0]["items"]  # a key's puts answer its last one
    after = results(c, get(ns, "k"), get(ns, "new"))
    assert [value(f) for f in after] == [{"v": 3}, {"v": 9}]
    # a delete: the batch's own get still answers the item; the next batch's does not
    out = results(c, put(ns, "new", None), get(ns, "new"), put(ns, "k", {"v": 4}),
                  put(ns, "k", None))
    assert value(out[1]) == {"v": 9} and out[0]["forgotten"]
    assert out[2] == out[3] and out[3]["forgotten"]  # the key's last write: its delete
    assert results(c, get(ns, "new"), get(ns, "k")) == [None, None]


def test_a_limit_of_0_answers_nothing_and_a_depth_of_0_the_empty_namespace(
        c: httpx.Client) -> None:
    results(c, put(["zero", "a"], "k", {"v": 1}), put(["zero", "b"], "k", {"v": 1}))
    out = results(c, search(["zero"]), {**search(["zero"]), "limit": 0},
                  {**search(["zero"]), "limit": 0, "query": "anything"},
                  {"op": "list", "conditions": [{"type": "prefix", "path": ["zero"]}],
                   "maxDepth": 0},
                  {"op": "list", "conditions": [{"type": "prefix", "path": ["nothing"]}],
                   "maxDepth": 0},
                  {"op": "list", "conditions": [{"type": "prefix", "path": ["zero"]}],
                   "limit": 0},
                  {"op": "list", "conditions": [{"type": "prefix", "path": ["zero"]}],
                   "maxDepth": 1})
    assert len(out[0]) == 2  # the positive control
    assert out[1:6] == [[], [], [[]], [], []]
    assert out[6] == [["zero"]]
    for bad in ({**search(["zero"]), "limit": -1},
                {"op": "list", "maxDepth": -1}):
        assert_error(store(c, bad), 422, "invalid_arguments")


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


def test_a_label_holding_a_control_or_bidi_character_is_refused_at_the_door(
        c: httpx.Client) -> None:
    assert results(c, put(["labels", "ok"], "k", {"v": 1}))[0]["items"]  # the positive control
    for ns, code in ((["\x01" * 400], "U+0001"), (["labels", "a\u202eb"], "U+202E"),
                     (["labels", "a\x7fb"], "U+007F"), (["labels", "a\u2028b"], "U+2028")):
        bad = assert_error(store(c, put(ns, "k", {"v": 1})), 422, "invalid_arguments")
        assert "namespace label" in bad["message"] and code in bad["message"], bad
        bad = assert_error(store(c, search(ns)), 422, "invalid_arguments")
        assert "prefix label" in bad["message"] and code in bad["message"], bad
    bad = assert_error(store(c, put(["labels", "ok"], "a\u202eb", {"v": 1})), 422,
                       "invalid_arguments")
    assert "key" in bad["message"] and "U+202E" in bad["message"], bad
    assert results(c, {"op": "list", "conditions": [{"type": "prefix", "path": ["labels"]}]}
                   )[0] == [["labels", "ok"]]
