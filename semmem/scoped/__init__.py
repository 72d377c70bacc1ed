"""Scoped memories: a fact's metadata, filters over it, and reads, deletes and token scopes
under a filter.

``metadata`` holds a fact's metadata rules and index tags; ``filters`` the ``Filter`` (a test on
an item and the same test as a filter expression); ``filtered`` Memory's reads and deletes under
a filter and a binding's scope over its writes.
"""
