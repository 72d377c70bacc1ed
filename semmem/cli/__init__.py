"""The ``semmem`` command line: ``commands`` (every verb, thin calls into the core),
``options`` (what the commands share), ``model`` (``semmem model fetch|verify``) and
``backup`` (``semmem backup create|list|verify|restore|expire``)."""

from __future__ import annotations


def main() -> None:
    """Entry point of the ``semmem`` script: every command runs under umask 077."""
    import os

    from semmem.store import quiet_engine_logs
    from semmem.store.modes import PRIVATE_UMASK

    # Before any command: the store, backup objects, a restored store and an export hold fact
    # texts, so every file a command makes is its owner's only (0600, directories 0700).
    os.umask(PRIVATE_UMASK)
    quiet_engine_logs()  # before any command loads the storage engine
    import sys

    from pydantic import ValidationError

    from semmem.cli.commands import app

    try:
        app()
    except ValidationError as exc:  # a setting (SEMMEM_*) out of its bounds: say which
        if exc.title != "Settings":
            raise
        for error in exc.errors():
            where = "SEMMEM_" + "_".join(str(p) for p in error["loc"]).upper()
            print(f"error: {where}: {error['msg']}", file=sys.stderr)
        sys.exit(2)
