"""``python -m semmem.cli``: the ``semmem`` command."""

from semmem.cli import main

main()
