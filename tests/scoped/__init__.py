"""Scoped memories: reads and deletes under a filter."""
