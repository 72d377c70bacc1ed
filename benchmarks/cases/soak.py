"""Crash soak: a real server under a bounded write load, killed with SIGKILL at random points.

    .venv/bin/python -m benchmarks soak --kills 20            # the bundled model
    .venv/bin/python -m benchmarks soak --kills 20 --fake-model
    .venv/bin/python -m benchmarks soak --kills 10 --idle-replica   # a second, idle replica
    .venv/bin/python -m benchmarks soak --stops 10   # two replicas, one SIGTERMed after forgets

The load, the checks after each restart and the final byte scan are ``tests/support/soak.py``
(``tests/system/test_crash.py`` runs a short version of the same code). ``--stops N`` runs the
replicas' mode instead (``run_stops``): N cycles of load through two servers, forgets through
one of them, SIGTERM to it within 2 s, and a decoded scan for every dropped text and vector
while only the other one runs. Prints the figures as
JSON; exit status 1 when any check failed.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

from tests.support.soak import run, run_stops


def main() -> None:
    """Command line: run the soak and print its figures as JSON."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--kills", type=int, default=20)
    ap.add_argument("--partitions", type=int, default=12)
    ap.add_argument("--clients", type=int, default=4)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--fake-model", action="store_true",
                    help="the deterministic fake embedder instead of the bundled model")
    ap.add_argument("--idle-replica", action="store_true",
                    help="a second server that stays idle on a partition past the retention "
                         "while the first writes, forgets and cleans up, then writes")
    ap.add_argument("--stops", type=int, default=0,
                    help="instead of kills: cycles of two replicas, one stopped (SIGTERM) "
                         "within 2 s of forgets made through it")
    ap.add_argument("--data", type=Path, default=None, help="store directory (default: a temp)")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="semmem-soak-") as tmp:
        data = args.data or Path(tmp) / "db"
        started = time.monotonic()
        if args.stops:
            figures = run_stops(args.stops, data=data, fake_model=args.fake_model,
                                partitions=args.partitions, clients=args.clients,
                                seed=args.seed, log=Path(tmp) / "server.log")
        else:
            figures = run(args.kills, data=data, fake_model=args.fake_model,
                          partitions=args.partitions, clients=args.clients, seed=args.seed,
                          log=Path(tmp) / "server.log", idle_replica=args.idle_replica)
        out = {"model": "fake" if args.fake_model else "all-MiniLM-L6-v2",
               "partitions": args.partitions, "clients": args.clients, "seed": args.seed,
               "idle_replica": args.idle_replica, "stops": args.stops,
               "seconds": round(time.monotonic() - started, 1), **figures.summary()}
    print(json.dumps(out, indent=2))
    sys.exit(1 if figures.violations else 0)


if __name__ == "__main__":
    main()
