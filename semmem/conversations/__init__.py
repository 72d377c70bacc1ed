"""Conversations: sessions of messages ingested without an LLM, stored as numbered pieces.

- ``pieces``: the cutter and the piece's record fields (``Item.piece`` reads them back).
- ``messages``: an ingestion request, checked (``POST /ingest``, the CLI, the client).
- ``ingest``: ``Conversations(host).ingest(...)``: messages → pieces → one write.
- ``sessions``: a partition's sessions listed, one opened, one forgotten whole.
- ``forgotten``: digests, and each session's ledger of the messages forgotten (keyed hashes).
- ``host``: ``Host``, what this package needs of a memory (``Memory`` is one), handed in.

A session is a keyed item (``semmem.keyed``, space ``"session"``, key the caller's
``sessionId``).
"""
