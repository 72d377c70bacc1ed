"""The public data sets the benchmarks read: where each is published, how a run is told where
it is. None is copied into the repository; a benchmark takes its folder as an argument or an
environment variable and, when neither names one that exists, says which data set it is and
where to get it."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Published:
    """One public data set: its name, the variable that points at it, where it comes from."""

    name: str
    variable: str
    source: str
    layout: str

    def path(self, given: Path | None = None) -> Path:
        """The folder ``given`` (an argument), else ``$<variable>``; it must exist.

        Raises:
            SystemExit: neither names a folder or file that exists (the message says which
                data set, where it is published and how to point at it).
        """
        raw = given if given is not None else os.environ.get(self.variable)
        path = Path(raw) if raw else None
        if path is not None and path.exists():
            return path
        where = f"{path} does not exist" if path is not None else "no folder given"
        raise SystemExit(
            f"{self.name}: {where}. This benchmark reads the public {self.name} data set, "
            f"published at {self.source} (not copied into this repository): {self.layout}; "
            f"pass its path as an argument or set {self.variable}.")


LOCOMO = Published(
    "LoCoMo", "SEMMEM_LOCOMO", "https://github.com/snap-research/locomo",
    "a folder of LoCoMo conversations, one JSON file per sample of its data/locomo10.json, "
    "as semmem/evaluation/dataset.py's load_locomo reads them (the docs' dev split: "
    "26, 30, 41, 42, 43)")
LONGMEMEVAL = Published(
    "LongMemEval", "SEMMEM_LONGMEMEVAL", "https://github.com/xiaowu0162/LongMemEval",
    "a folder of LongMemEval-S questions, one JSON file per question (named by its "
    "question_id; the docs' dev split holds 64)")
MEMSIM = Published(
    "MemSim", "SEMMEM_MEMSIM", "https://github.com/nuster1128/MemSim",
    "a checkout (or a bare mirror) of that repository")
