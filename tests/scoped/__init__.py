"""Scoped memories: metadata rules, filters, and reads and deletes under a filter."""
