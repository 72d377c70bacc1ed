"""The command line, end to end with the real model and a real store."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from semmem.cli.commands import app
from semmem.embedding.files import default_model_dir
from tests.support.files import files_with

runner = CliRunner()


def _run(tmp_path: Path, *args: str, input: str | None = None) -> tuple[int, str, str]:
    result = runner.invoke(app, [*args], env={"SEMMEM_DATA": str(tmp_path / "db")}, input=input)
    return result.exit_code, result.stdout, result.stderr


def test_cli_remember_recall_forget_round_trip(tmp_path: Path) -> None:
    code, out, _ = _run(tmp_path, "remember", "Prefers metric units", "-p", "alice")
    assert code == 0 and json.loads(out) == {"status": "stored", "n": 1, "count": 1}
    _run(tmp_path, "remember", "Has a cat named Tom", "-p", "alice")
    code, out, _ = _run(tmp_path, "recall", "-p", "alice", "which units?", "--json")
    body = json.loads(out)
    assert code == 0 and body["text"].startswith("1. Prefers metric units")
    assert body["sources"][0]["id"] == "1" and body["cursor"].startswith("c1.")
    code, out, _ = _run(tmp_path, "forget", "1", "-p", "alice")
    assert code == 0 and json.loads(out)["forgotten"] is True
    code, out, _ = _run(tmp_path, "list", "-p", "alice")
    assert out == "2. Has a cat named Tom\n"


def test_cli_errors_are_one_line_and_non_zero(tmp_path: Path) -> None:
    code, out, err = _run(tmp_path, "forget", "7", "-p", "alice")
    assert code == 1 and out == ""
    assert err == "error: item 7 does not exist in this memory\n"
    code, _, err = _run(tmp_path, "remember", "   ", "-p", "alice")
    assert code == 1 and err == "error: text must not be empty or blank\n"
    code, _, err = _run(tmp_path, "delete-partition", "-p", "alice")
    assert code == 1 and "--yes" in err


def test_cli_export_import_and_record_fields(tmp_path: Path) -> None:
    _run(tmp_path, "import", "-p", "a", "-", input='{"text": "alpha"}\n{"text": "beta"}\n')
    code, out, _ = _run(tmp_path, "update", "2", "-p", "a", "--note", "from import")
    assert code == 0
    _run(tmp_path, "merge", "1", "-p", "a", "--into", "2")
    export = tmp_path / "a.jsonl"
    assert _run(tmp_path, "export", "-p", "a", "-o", str(export))[0] == 0
    records = [json.loads(line) for line in export.read_text().splitlines()]
    assert [(r["n"], r["text"], r.get("note"), r.get("mergedInto")) for r in records] == [
        (1, "alpha", None, 2), (2, "beta", "from import", None)]
    code, out, _ = _run(tmp_path, "import", "-p", "b", str(export))
    assert code == 0 and json.loads(out)["imported"] == 2
    code, out, _ = _run(tmp_path, "recall", "-p", "b")
    assert out == "2. beta — from import\n"
    code, _, err = _run(tmp_path, "import", "-p", "b", "-", input="not json\n")
    assert code == 1 and err.startswith("error: -:1: not JSON")


def test_cli_stats_maintain_delete(tmp_path: Path) -> None:
    _run(tmp_path, "remember", "some fact", "-p", "x")
    code, out, _ = _run(tmp_path, "stats")
    assert json.loads(out) == {"partitions": 1, "names": ["x"]}
    code, out, _ = _run(tmp_path, "maintain", "--now")
    assert code == 0 and json.loads(out)[0]["partition"] == "x"
    code, out, _ = _run(tmp_path, "delete-partition", "-p", "x", "--yes")
    assert json.loads(out) == {"deleted": True}
    code, out, _ = _run(tmp_path, "maintain", "--now")  # purges the name from the registry
    assert code == 0 and json.loads(out) == []
    assert files_with(tmp_path, b'"x"') == []


def test_cli_missing_model_is_a_clear_error(tmp_path: Path) -> None:
    model = tmp_path / "models" / "all-MiniLM-L6-v2"
    shutil.copytree(default_model_dir(), model)
    shutil.copy(default_model_dir().parent / "manifest.json", model.parent / "manifest.json")
    (model / "tokenizer.json").unlink()  # the ONNX encoder reads it (it never reads the weights)
    code, _, err = _run(tmp_path, "recall", "-p", "x", "--model", str(model))
    assert code == 1
    assert "tokenizer.json is missing; run `semmem model fetch" in err


@pytest.mark.parametrize("args", [["model", "verify"]])
def test_cli_model_verify(tmp_path: Path, args: list[str]) -> None:
    code, out, _ = _run(tmp_path, *args)
    assert code == 0 and out.startswith("model all-MiniLM-L6-v2 OK")


async def _seed_big(root: Path, count: int, planted: dict[int, int]) -> None:
    """``count`` facts of random vectors under the bundled model's id, some pairs planted near
    each other (writing them through the store, not the model, keeps this test fast)."""
    import numpy as np

    from semmem.embedding.files import load_spec
    from semmem.store import ItemRow, Mutation, Store

    model_id = load_spec(default_model_dir()).model_id
    rng = np.random.default_rng(3)
    vectors = rng.normal(size=(count, 384)).astype(np.float32)
    for a, b in planted.items():
        vectors[b] = vectors[a] + 0.02 * rng.normal(size=384)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    store = Store(str(root), dim=384, model_id=model_id)
    await store.open()
    rows = [ItemRow(i + 1, f"fact number {i + 1}", vectors[i], i, i, 1) for i in range(count)]
    await store.write("big", lambda _view: Mutation(items=rows, hwm=count))
    await store.close()


def test_cli_similar_groups_a_10k_partition(tmp_path: Path) -> None:
    import asyncio

    planted = {5: 9000, 1234: 4321, 9999: 17}
    asyncio.run(_seed_big(tmp_path / "db", 10_000, planted))
    code, out, err = _run(tmp_path, "similar", "-p", "big", "--json", "--threshold", "0.9")
    assert code == 0, err
    found = [[f["n"] for f in g["facts"]] for g in json.loads(out)["groups"]]
    # newest first within a group: the higher number was written later here
    assert sorted(found) == sorted([max(a, b) + 1, min(a, b) + 1] for a, b in planted.items())
    code, out, _ = _run(tmp_path, "similar", "-p", "big", "--threshold", "0.9")
    assert code == 0
    assert "9001. fact number 9001  (~#6 1.00)\n6. fact number 6  (~#9001 1.00)\n" in out


def test_cli_check_finds_a_number_held_twice_and_repair_renumbers_it(tmp_path: Path) -> None:
    import lance
    import pyarrow as pa

    from semmem.store import table_name

    _run(tmp_path, "remember", "Prefers metric units", "-p", "alice")
    _run(tmp_path, "remember", "Has a cat named Tom", "-p", "alice")
    code, out, _ = _run(tmp_path, "check")
    assert code == 0 and json.loads(out)[0]["ok"] is True
    uri = str(tmp_path / "db" / f"{table_name('alice')}.lance")
    ds = lance.dataset(uri)
    two = next(r for r in ds.to_table().to_pylist() if r["key"] == "i:2")
    _run(tmp_path, "remember", "Lives in Lyon", "-p", "bob")  # its text's vector, as written
    lyon = next(r for r in lance.dataset(str(tmp_path / "db" / f"{table_name('bob')}.lance"))
                .to_table().to_pylist() if r["key"] == "i:1")
    lance.write_dataset(pa.Table.from_pylist(  # what a blind commit left: #2 handed out twice
        [{**two, "text": "Lives in Lyon", "vector": lyon["vector"], "ts": two["ts"] + 1,
          "seq": 9}], schema=ds.schema), uri, mode="append")
    code, out, _ = _run(tmp_path, "check", "-p", "alice")
    assert code == 1 and json.loads(out)[0]["problems"] == ["2 rows for number 2"]
    code, out, _ = _run(tmp_path, "check", "--repair")
    report = json.loads(out)[0]
    assert code == 0 and report["ok"] and report["renumbered"] == {"2": 3}
    code, out, _ = _run(tmp_path, "list", "-p", "alice")
    assert out == "1. Prefers metric units\n2. Has a cat named Tom\n3. Lives in Lyon\n"


def test_cli_check_repair_purges_the_text_whose_forget_won(tmp_path: Path) -> None:
    """A forgotten text appended back beside its tombstone (a blind commit): the repair lets
    the forget win and, before it returns, the text and its vector are in no file, old
    versions included; the servers of the store are asked to purge as well."""
    import lance
    import pyarrow as pa

    from semmem.store import table_name
    from tests.support.files import decoded_with

    secret = "the locker code is 5521-repair-secret"
    env = {"SEMMEM_DATA": str(tmp_path / "db"), "SEMMEM_VERSION_RETENTION_S": "0"}
    assert runner.invoke(app, ["remember", secret, "-p", "alice"], env=env).exit_code == 0
    runner.invoke(app, ["remember", "Has a cat named Tom", "-p", "alice"], env=env)
    uri = str(tmp_path / "db" / f"{table_name('alice')}.lance")
    ds = lance.dataset(uri)
    one = next(r for r in ds.to_table().to_pylist() if r["key"] == "i:1")
    assert runner.invoke(app, ["forget", "1", "-p", "alice"], env=env).exit_code == 0
    ds = lance.dataset(uri)
    lance.write_dataset(pa.Table.from_pylist(  # the text back beside its tombstone
        [{**one, "seq": 9}], schema=ds.schema), uri, mode="append")
    vector = one["vector"]
    assert decoded_with(tmp_path / "db", secret, vector)  # the positive control

    def asked() -> int:  # when the servers were last asked to purge the partition
        rows = lance.dataset(str(tmp_path / "db" / "_semmem.lance")).to_table().to_pylist()
        return max(json.loads(r["value"])["at"] for r in rows
                   if r["key"] == f"u:{table_name('alice')}")

    forgotten_at = asked()  # the CLI's forget asked
    result = runner.invoke(app, ["check", "--repair", "-p", "alice"], env=env)
    report = json.loads(result.stdout)[0]
    assert result.exit_code == 0 and report["forgotten"] == [1] and report["ok"]
    assert decoded_with(tmp_path / "db", secret, vector) == []
    assert asked() > forgotten_at  # and so did the repair
    _, out, _ = _run(tmp_path, "list", "-p", "alice")
    assert out == "2. Has a cat named Tom\n"


def test_cli_metadata_filters_and_forget_matching(tmp_path: Path) -> None:
    code, out, _ = _run(tmp_path, "remember", "-p", "a", "Alice likes tea", "--meta", "user=alice",
                        "--meta", "run=2")
    assert code == 0 and json.loads(out)["n"] == 1
    _run(tmp_path, "remember", "-p", "a", "Bob likes tea", "--meta", "user=bob")
    code, out, _ = _run(tmp_path, "search", "tea", "-p", "a", "--meta", "run=2.0")
    found = json.loads(out)
    assert code == 0 and [e["n"] for e in found["items"]] == [1]
    assert found["items"][0]["metadata"] == {"user": "alice", "run": 2}
    code, out, _ = _run(tmp_path, "list", "-p", "a", "--meta", "user=bob",
                        "--updated-after", "2020-01-01T00:00:00Z")
    assert code == 0 and out.splitlines() == ["2. Bob likes tea"]
    code, out, err = _run(tmp_path, "remember", "-p", "a", "x", "--meta", "no-equals")
    assert code != 0 and "key=value" in err + out
    code, out, _ = _run(tmp_path, "forget-matching", "-p", "a", "--meta", "user=alice")
    assert code == 0 and json.loads(out)["forgotten"] == [1]
    code, out, _ = _run(tmp_path, "list", "-p", "a")
    assert out.splitlines() == ["2. Bob likes tea"]
    code, out, err = _run(tmp_path, "forget-matching", "-p", "a")
    assert code != 0 and "needs a filter" in err + out
