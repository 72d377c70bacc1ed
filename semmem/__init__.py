"""semmem: a semantic memory provider for AI agents.

Numbered facts per partition in LanceDB, embedded with a bundled sentence-transformers model;
recall returns the facts relevant to the current input within the host's byte budget.
"""

from semmem.errors import SemmemError
from semmem.memory import Memory, Operation, Recall
from semmem.ranking import Ranker, RankingConfig
from semmem.settings import Settings
from semmem.store import Store

__all__ = ["Memory", "Operation", "Ranker", "RankingConfig", "Recall", "SemmemError", "Settings",
           "Store"]
__version__ = "0.1.0"
