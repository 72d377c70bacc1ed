"""A local table's new files are synced with their folders before a manifest names them, and
its manifest with ``_versions/`` before an answer; a failed sync is the commit's error."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from semmem.memory import Memory
from semmem.store.files import sync_files, sync_manifest


class _Deletion:
    """Where Lance keeps one fragment's deletions (``DeletionFile.path``)."""

    def path(self, fragment: int) -> str:
        return f"_deletions/{fragment}-1-7.arrow"


@pytest.fixture
def synced(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The paths ``os.fsync`` is called on from now on."""
    paths: list[str] = []
    real = os.fsync

    def fsync(fd: int) -> None:
        paths.append(os.readlink(f"/proc/self/fd/{fd}"))
        real(fd)

    monkeypatch.setattr(os, "fsync", fsync)
    return paths


def _table(tmp_path: Path) -> Path:
    root = tmp_path / "t.lance"
    for folder, name in (("data", "a.lance"), ("data", "b.lance"), ("_deletions", "3-1-7.arrow"),
                         ("_versions", "18446744073709551610.manifest")):
        (root / folder).mkdir(parents=True, exist_ok=True)
        (root / folder / name).write_bytes(b"x")
    return root


def test_every_new_file_and_its_folder_are_synced(tmp_path: Path, synced: list[str]) -> None:
    root = _table(tmp_path)
    sync_files(str(root), ["a.lance", "b.lance"], [(3, _Deletion()), (4, None)])
    assert sorted(synced) == sorted(str(root / p) for p in (
        "data/a.lance", "data/b.lance", "_deletions/3-1-7.arrow", "data", "_deletions"))
    synced.clear()
    sync_manifest(f"file://{root}", 5)
    assert sorted(synced) == sorted(str(root / p) for p in (
        "_versions/18446744073709551610.manifest", "_versions"))


def test_a_failed_sync_is_raised(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root = _table(tmp_path)
    real = os.fsync

    def fsync(fd: int) -> None:
        if os.readlink(f"/proc/self/fd/{fd}").endswith(".arrow"):
            raise OSError(5, "Input/output error")
        real(fd)

    monkeypatch.setattr(os, "fsync", fsync)
    with pytest.raises(OSError, match="Input/output"):
        sync_files(str(root), ["a.lance", "b.lance"], [(3, _Deletion())])


async def test_a_write_syncs_its_files_and_manifest(memory: Memory, synced: list[str]) -> None:
    """A text edit of an item outside the tail writes a deletion file too."""
    await memory.import_("p", [{"text": f"fact {i}"} for i in range(200)])
    synced.clear()
    await memory.update("p", 3, "fact three, changed")
    folders = {os.path.basename(os.path.dirname(p)) for p in synced}
    assert {"data", "_deletions", "_versions"} <= folders
    assert any(p.endswith(".manifest") for p in synced)
