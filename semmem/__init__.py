"""semmem: a semantic memory provider for AI agents.

Numbered facts per partition in LanceDB, embedded with a bundled sentence-transformers model;
recall returns the facts relevant to the current input within the host's byte budget.

The public names are imported on first use, so ``import semmem.contract`` (or the web
declaration) loads no engine.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from semmem.errors import SemmemError
    from semmem.memory import Memory, Operation, Recall
    from semmem.ranking.ranker import Ranker, RankingConfig
    from semmem.settings import Settings
    from semmem.store import Store

_HOMES = {"Memory": "memory", "Operation": "memory", "Recall": "memory", "Ranker": "ranking",
          "RankingConfig": "ranking", "SemmemError": "errors", "Settings": "settings",
          "Store": "store"}
__all__ = ["Memory", "Operation", "Ranker", "RankingConfig", "Recall", "SemmemError", "Settings",
           "Store"]
__version__ = "0.1.0"


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module 'semmem' has no attribute {name!r}")
    return getattr(importlib.import_module(f"semmem.{home}"), name)
