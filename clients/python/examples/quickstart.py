"""Store and recall a fact, see a stale cursor refused: ``python quickstart.py URL TOKEN``."""

from __future__ import annotations

import sys

from semmem_client import Client, Conflict


def main(url: str, token: str, partition: str = "alice", memory_path: str = "/memory") -> str:
    """Remember, recall, then an edit under a stale cursor; returns the final recall text."""
    with Client(url, token, memory_path=memory_path) as memory:
        memory.remember(partition, "Prefers metric units")
        print(memory.recall(partition, "Prefers metric units?").text)

        turn = memory.turn(partition, None)  # one model request: its tools carry the cursor
        n = turn.recall.sources[0]["id"]
        turn.update(n, "Prefers SI units")
        try:
            turn.forget(n)  # fact n changed after this turn's recall
        except Conflict as exc:
            print(f"{exc.code} ({exc.status}): {exc.message}")
        return memory.recall(partition, None).text


if __name__ == "__main__":
    print(main(sys.argv[1], sys.argv[2]))
