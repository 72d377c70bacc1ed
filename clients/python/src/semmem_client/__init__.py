"""semmem_client: a light client for a semmem server, speaking the host's side of the contract.

    from semmem_client import Client
    with Client("http://127.0.0.1:8080", "a-token-of-16-bytes-or-more") as memory:
        memory.remember("alice", "Prefers metric units")
        print(memory.recall("alice", "which units?").text)
        memory.ingest("alice", "chat-1", [{"role": "user", "content": "I got an air fryer"}])

Adapters: ``semmem_client.langchain`` (LangChain tools, a LangGraph pre-model recall) and
``semmem_client.openai_agents`` (function tools, recall as dynamic instructions), each an extra.
"""

from semmem_client._async import AsyncClient, AsyncTurn
from semmem_client._client import Client, Turn
from semmem_client._errors import (
    ClientClosed,
    Conflict,
    DeadlineExceeded,
    Forbidden,
    IdempotencyMismatch,
    InternalError,
    InvalidArguments,
    InvalidRequest,
    NotFound,
    Overloaded,
    ProtocolError,
    QuotaExceeded,
    RateLimited,
    RequestTimeout,
    SemmemError,
    TooLarge,
    TransportError,
    Unauthorized,
    Unavailable,
)
from semmem_client._ingest import IngestResult, Message, SessionSummary
from semmem_client._retry import Retry
from semmem_client._wire import (
    Forgotten,
    Found,
    Item,
    ItemsPage,
    PartitionsPage,
    Recall,
    SearchResult,
    Similar,
    Source,
    WriteResult,
)

__version__ = "0.1.0"
__all__ = [
    "AsyncClient", "AsyncTurn", "Client", "ClientClosed", "Conflict", "DeadlineExceeded",
    "Forbidden", "Forgotten", "Found", "IdempotencyMismatch", "IngestResult", "InternalError",
    "InvalidArguments", "InvalidRequest", "Item", "ItemsPage", "Message", "NotFound",
    "Overloaded", "PartitionsPage", "ProtocolError", "QuotaExceeded", "RateLimited", "Recall",
    "RequestTimeout", "Retry", "SearchResult", "SemmemError", "SessionSummary", "Similar",
    "Source", "TooLarge", "TransportError", "Turn",
    "Unauthorized", "Unavailable", "WriteResult",
]
