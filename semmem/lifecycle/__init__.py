"""The owner's lifecycle of a store: upkeep (maintain, reindex) and retention.

Each owner operation has its own module here; ``Memory`` keeps a one-line door to each, so
the core stays the only thing that touches the store.
"""
