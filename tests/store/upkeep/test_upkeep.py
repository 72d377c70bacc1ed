"""Lance's own log lines (Rust, straight to stderr) stay quiet where semmem handles the case
itself: a compaction that loses its commit to a concurrent write."""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.server import REPO

RACE = textwrap.dedent("""
    import sys
    from datetime import timedelta
    from semmem.store import quiet_engine_logs
    quiet_engine_logs()  # as the entry points do at start-up
    import lance, pyarrow as pa
    from lance.optimize import Compaction

    uri = sys.argv[1]
    lance.write_dataset(pa.table({"k": [1, 2, 3]}), uri)
    lance.write_dataset(pa.table({"k": [4]}), uri, mode="append")
    ds = lance.dataset(uri)
    plan = Compaction.plan(ds, {"materialize_deletions": True})
    rewrites = [task.execute(ds) for task in plan.tasks]
    lance.dataset(uri).update({"k": "k + 10"}, where="k = 1")  # a write wins the race
    try:
        Compaction.commit(ds, rewrites)
    except OSError:
        print("lost the race")
""")


def test_a_compaction_losing_its_race_logs_no_engine_warning(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("LANCE_LOG", "LANCEDB_LOG"))}
    env["PYTHONPATH"] = str(REPO)
    done = subprocess.run([sys.executable, "-c", RACE, str(tmp_path / "t.lance")], env=env,
                          capture_output=True, text=True, timeout=120)
    assert done.stdout.strip() == "lost the race", done.stderr
    assert "WARN" not in done.stderr, done.stderr


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Path]:
    """A 3 MiB tmpfs (root mounts it, as on CI); skipped where mounting is not allowed."""
    mount = tmp_path / "disk"
    mount.mkdir()
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=3m", "tmpfs", str(mount)],
                          capture_output=True, text=True)
    if done.returncode:
        pytest.skip(f"cannot mount a small tmpfs here: {done.stderr.strip()}")
    try:
        yield mount
    finally:
        subprocess.run(["umount", "-l", str(mount)], check=False)


async def test_a_full_disk_refuses_writes_cleanly_and_maintenance_frees_space_after_it(
        small_disk: Path) -> None:
    """ENOSPC: writes answer ``Unavailable`` (503) and lose nothing acknowledged; a pass that
    fails to compact still removes old versions and sweeps; once the disk has room again,
    writes go on and the store checks clean."""
    from datetime import timedelta

    from semmem.embedding.fakes import HashingEmbedder
    from semmem.errors import Unavailable
    from semmem.memory import Memory
    from semmem.store import Store, table_name
    from semmem.store.commit.fence import Fence, listed_versions
    from semmem.store.upkeep.check import check_partition

    emb = HashingEmbedder()
    store = Store(str(small_disk / "db"), dim=emb.dim, model_id=emb.model_id, tail_rows=1,
                  fence=Fence(skew=0.05, budget=0.3), version_retention=timedelta(0))
    await store.open()
    memory = Memory(store, emb)
    acknowledged: list[tuple[int, str]] = []
    filler = small_disk / "filler"
    with filler.open("wb") as f:  # leave about 600 KB for the store
        f.write(b"\0" * (2 << 20) + b"\0" * (400 << 10))
    for i in range(400):
        text = f"fact number {i}" + " padding" * 100
        try:
            acknowledged.append(((await memory.remember("p", text))["n"], text))
        except Unavailable:
            break
    else:
        pytest.fail("the disk never filled")
    assert len(acknowledged) > 5
    uri = str(small_disk / "db" / f"{table_name('p')}.lance")
    before = len(listed_versions(uri, {}))
    with pytest.raises(Unavailable):  # still full
        await memory.remember("p", "one more")
    with contextlib.suppress(OSError):  # compaction may fail for room; cleanup runs anyway
        await store.maintain("p", retention=timedelta(0))
    assert len(listed_versions(uri, {})) < before  # old versions went, freeing their files
    filler.unlink()
    await store.maintain("p", retention=timedelta(0))
    n = (await memory.remember("p", "after the disk cleared"))["n"]
    assert n == acknowledged[-1][0] + 1
    for gone, _ in acknowledged[::2]:
        await memory.forget("p", gone)
    await store.maintain("p", retention=timedelta(0))
    live = {it.n: it.text for it in await memory.list("p")}
    assert live == {**dict(acknowledged[1::2]), n: "after the disk cleared"}
    assert not (await check_partition(store, "p")).problems
    await store.close()
