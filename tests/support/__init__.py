"""Helpers shared by tests and benchmarks: the real-server harness, request helpers, drivers."""
