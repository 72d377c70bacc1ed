"""The ``semmem`` command line: ``commands`` (every verb, thin calls into the core),
``options`` (what the commands share), ``model`` (``semmem model fetch|verify``) and
``backup`` (``semmem backup create|list|verify|restore|expire``)."""

from __future__ import annotations


def main() -> None:
    """Entry point of the ``semmem`` script."""
    from semmem.store import quiet_engine_logs

    quiet_engine_logs()  # before any command loads the storage engine
    from semmem.cli.commands import app

    app()
