"""Which partition holds a user's (or a LangGraph namespace's) memory: one mapping for every
adapter, so no two users, and no user and namespace, share a partition by accident.

A namespace is its labels, each with ``%`` written ``%25`` and ``/`` written ``%2F``, joined
by ``/``; a user is the namespace ``(user,)``. So user ``alice/memories`` is partition
``alice%2Fmemories``, apart from namespace ``("alice", "memories")`` (``alice/memories``),
and user ``a%2Fb`` is ``a%252Fb``, apart from user ``a/b`` (``a%2Fb``).
"""

from __future__ import annotations

MAX_PARTITION_BYTES = 1024


def partition_of(namespace: tuple[str, ...]) -> str:
    """The partition a namespace is stored in (``ValueError`` past 1,024 UTF-8 bytes)."""
    partition = "/".join(label.replace("%", "%25").replace("/", "%2F") for label in namespace)
    if not partition or len(partition.encode("utf-8", "surrogatepass")) > MAX_PARTITION_BYTES:
        raise ValueError(f"namespace {namespace!r} maps to a partition of more than "
                         f"{MAX_PARTITION_BYTES} UTF-8 bytes (or none)")
    return partition


def namespace_of(partition: str) -> tuple[str, ...]:
    """The namespace of a partition (``partition_of``'s inverse)."""
    return tuple(label.replace("%2F", "/").replace("%25", "%")
                 for label in partition.split("/"))


def user_partition(user: str) -> str:
    """The partition of ``user``'s memory: that of the namespace ``(user,)``, as the LangGraph
    store maps it (``ValueError`` for an empty user or past 1,024 UTF-8 bytes)."""
    if not user:
        raise ValueError("no user: an empty user id names no memory")
    return partition_of((user,))
