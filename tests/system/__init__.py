"""Whole processes: the CLI, offline serving, crash and load runs, notebooks, the browser."""
