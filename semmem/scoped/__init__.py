"""Scoped memories: reads, deletes and token scopes under a filter.

``filtered`` holds Memory's reads and deletes under a filter and a binding's scope over its
writes; the metadata rules and the ``Filter`` they run are an item's (``semmem.items.metadata``,
``semmem.items.filters``).
"""
