"""Where ``SemmemStore`` answered otherwise than LangGraph's ``InMemoryStore`` (issue 54, section
6), each case run on both (``stores`` fixture, conftest.py): a non-finite number in a filter
equals no stored value and never the string ``"inf"`` or ``"nan"`` (the client sends it as
``{"$float": …}``, JSON having no infinity); ``search(limit=0)`` is ``[]`` and
``list_namespaces(max_depth=0)`` is ``[()]``; one batch answers its reads against the store as
it found it, then applies its writes (``InMemoryStore.batch``: ``_prepare_ops`` reads, then
``_apply_put_ops``, the last put of a key winning)."""

from __future__ import annotations

import math
from typing import Any, cast

from langgraph.store.base import (
    GetOp,
    Item,
    ListNamespacesOp,
    PutOp,
    Result,
    SearchItem,
    SearchOp,
)

from lgport import Stores


def test_a_non_finite_number_in_a_filter_never_matches_a_string(stores: Stores) -> None:
    store = stores.make(vector=False)
    for key, x in (("str-inf", "inf"), ("str-nan", "nan"), ("five", 5)):
        store.put(("edges",), key, {"x": x})

    def keys(filter: dict[str, object]) -> list[str]:
        return sorted(f.key for f in store.search(("edges",), filter=filter, limit=100))

    assert keys({"x": "inf"}) == ["str-inf"]  # a string operand: the positive control
    assert keys({"x": math.inf}) == [] and keys({"x": {"$eq": math.nan}}) == []
    assert keys({"x": {"$eq": -math.inf}}) == [] and keys({"x": math.nan}) == []
    assert keys({"x": {"$ne": math.nan}}) == ["five", "str-inf", "str-nan"]
    assert keys({"x": {"$lt": math.inf}}) == ["five"]  # float("inf") < inf is false
    assert keys({"x": {"$gt": -math.inf}}) == ["five", "str-inf"]


def test_limit_0_and_max_depth_0_answer_as_langgraph(stores: Stores) -> None:
    store = stores.make(vector=False)
    assert store.list_namespaces(max_depth=0) == []  # nothing stored yet
    store.put(("a", "b"), "k", {"v": 1})
    store.put(("c",), "k", {"v": 1})
    assert len(store.search(("a",))) == 1  # the positive control
    assert store.search(("a",), limit=0) == []
    assert store.search(("a",), query="anything", limit=0) == []
    assert store.list_namespaces(max_depth=0) == [()]
    assert store.list_namespaces(prefix=("a",), max_depth=0) == [()]
    assert store.list_namespaces(prefix=("z",), max_depth=0) == []
    assert store.list_namespaces(limit=0) == []
    assert store.list_namespaces(max_depth=1) == [("a",), ("c",)]


def _value(result: Result) -> Any:
    """A get's item's value (``None``: no item)."""
    if result is None:
        return None
    assert isinstance(result, Item)
    return result.value


def test_a_batch_answers_its_reads_before_its_writes(stores: Stores) -> None:
    store = stores.make(vector=False)
    ns = ("batch",)
    store.put(ns, "k", {"v": 1})
    got = store.batch([PutOp(ns, "k", {"v": 2}), GetOp(ns, "k"), PutOp(ns, "new", {"v": 9}),
                       GetOp(ns, "new"), SearchOp(ns), ListNamespacesOp(),
                       PutOp(ns, "k", {"v": 3}), GetOp(ns, "k")])
    assert got[0] is None and got[2] is None and got[6] is None
    assert _value(got[1]) == {"v": 1} and _value(got[7]) == {"v": 1}  # as the batch found it
    assert got[3] is None
    assert [f.value for f in cast(list[SearchItem], got[4])] == [{"v": 1}] and got[5] == [ns]
    assert _value(store.get(ns, "k")) == {"v": 3}  # the key's last put
    assert _value(store.get(ns, "new")) == {"v": 9}
    got = store.batch([PutOp(ns, "new", None), GetOp(ns, "new")])
    assert _value(got[1]) == {"v": 9}
    assert store.get(ns, "new") is None
