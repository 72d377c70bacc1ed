"""Budget packing: whole lines, valid UTF-8, never over budget (property tests)."""

from __future__ import annotations

from collections.abc import Iterator, Sequence

from hypothesis import given, settings
from hypothesis import strategies as st

from semmem.items import Item
from semmem.packing import pack, pack_candidates, render_line


def _item(n: int, text: str, **attrs: object) -> Item:
    return Item(n=n, text=text, ts=0, updated=0, revision=1, seq=1, model="m", attrs=dict(attrs))


texts = st.text(
    alphabet=st.characters(blacklist_categories=("Cs",), blacklist_characters="\x00"),
    min_size=1, max_size=60,
).filter(lambda t: t.strip() != "")


@settings(max_examples=300, deadline=None)
@given(st.lists(texts, min_size=0, max_size=30), st.integers(min_value=1, max_value=600))
def test_pack_stays_within_budget_with_whole_lines(items: list[str], budget: int) -> None:
    ranked = [_item(i + 1, t) for i, t in enumerate(items)]
    packed = pack(ranked, budget)
    data = packed.text.encode("utf-8")
    assert len(data) <= budget
    assert data.decode("utf-8") == packed.text
    lines = packed.text.split("\n") if packed.text else []
    assert lines == [render_line(it) for it in packed.items]
    numbers = {it.n for it in ranked}
    assert all(it.n in numbers for it in packed.items)
    assert all("\n" not in render_line(it) for it in ranked)


def test_pack_skips_a_line_that_does_not_fit_and_takes_smaller_ones() -> None:
    ranked = [_item(1, "a" * 50), _item(2, "big " * 40), _item(3, "small")]
    packed = pack(ranked, 70)
    assert [it.n for it in packed.items] == [1, 3]
    assert packed.text == "1. " + "a" * 50 + "\n3. small"


def test_pack_exact_budget_boundary() -> None:
    ranked = [_item(1, "abc"), _item(2, "de")]
    assert pack(ranked, len("1. abc\n2. de")).text == "1. abc\n2. de"
    assert pack(ranked, len("1. abc\n2. de") - 1).text == "1. abc"


def test_pack_counts_multibyte_characters_in_bytes() -> None:
    ranked = [_item(1, "日本"), _item(2, "é")]
    assert pack(ranked, 9).text == "1. 日本"  # 3 + 6 bytes
    assert pack(ranked, 8).text == "2. é"


def test_pack_limits_sources_to_one_hundred() -> None:
    ranked = [_item(i, "x") for i in range(1, 300)]
    assert len(pack(ranked, 16_384).items) == 100


def test_render_line_appends_note_after_em_dash() -> None:
    assert render_line(_item(7, "Knee injury", note="resolved 2021")) == (
        "7. Knee injury — resolved 2021")
    assert render_line(_item(8, "two\nlines")) == "8. two lines"


@settings(max_examples=200, deadline=None)
@given(st.lists(texts, min_size=0, max_size=40), st.integers(min_value=1, max_value=400),
       st.integers(min_value=0, max_value=5))
def test_pack_candidates_equals_pack_over_the_distinct_stream(
    items: list[str], budget: int, every: int
) -> None:
    ranked = [_item(i + 1, t) for i, t in enumerate(items)]

    def distinct(cands: Sequence[Item]) -> Iterator[Item]:  # drop every k-th, like a deduper
        return (c for j, c in enumerate(cands) if not every or j % (every + 1) != every)

    packed, chosen = pack_candidates(ranked, lambda it: it, budget, 100, distinct)
    reference = pack(list(distinct(ranked)), budget)
    assert packed.text == reference.text
    assert [it.n for it in packed.items] == [it.n for it in reference.items] == [
        it.n for it in chosen]


def test_pack_candidates_counts_multibyte_characters_in_bytes() -> None:
    ranked = [_item(1, "日本"), _item(2, "é")]
    assert pack_candidates(ranked, lambda it: it, 9)[0].text == "1. 日本"  # 3 + 6 bytes
    assert pack_candidates(ranked, lambda it: it, 8)[0].text == "2. é"
    noted = [_item(3, "ab", note="ü")]  # "3. ab" + " — " + "ü": 5 + 5 + 2 bytes
    assert pack_candidates(noted, lambda it: it, 12)[0].text == "3. ab — ü"
    assert pack_candidates(noted, lambda it: it, 11)[0].text == ""


def test_pack_candidates_stops_consuming_once_nothing_left_can_fit() -> None:
    ranked = [_item(i, "x" * 20) for i in range(1, 401)]
    pulled: list[int] = []

    def distinct(cands: Sequence[Item]) -> Iterator[Item]:
        for c in cands:
            pulled.append(c.n)
            yield c

    packed, _ = pack_candidates(ranked, lambda it: it, 100, 100, distinct)
    assert [it.n for it in packed.items] == [1, 2, 3, 4]  # 4 lines of 23/24 bytes fill 95
    assert pulled == [1, 2, 3, 4]


def test_pack_candidates_keeps_looking_for_a_small_line_that_fits() -> None:
    ranked = [_item(1, "a" * 50), *(_item(i, "b" * 60) for i in range(2, 300)), _item(300, "c")]
    pulled: list[int] = []

    def distinct(cands: Sequence[Item]) -> Iterator[Item]:
        for c in cands:
            pulled.append(c.n)
            yield c

    packed, _ = pack_candidates(ranked, lambda it: it, 70, 100, distinct)
    assert [it.n for it in packed.items] == [1, 300]
    assert pulled[-1] == 300
