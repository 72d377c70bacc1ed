"""Conversations: sessions of messages ingested without an LLM, stored as numbered pieces.

- ``pieces``: the cutter and the piece's record fields (``Item.piece`` reads them back).
- ``messages``: an ingestion request, checked (``POST /ingest``, the CLI, the client).
- ``ingest``: ``Conversations(memory).ingest(...)``: messages → pieces → one write per chunk.
- ``sessions``: a partition's sessions listed, one opened, one forgotten whole.

A session is a keyed item (``semmem.keyed``, space ``"session"``, key the caller's
``sessionId``).
"""
