"""Load and overload on loopback: many clients, mixed operations, many partitions; then a
deliberate overload, and recovery.

    OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 SEMMEM_TORCH_THREADS=1 \\
      .venv/bin/python -m benchmarks load --seconds 60 --clients 32 --partitions 100

The three phases and their checks are ``tests/support/load.py`` (``tests/system/test_load.py``
runs a short version of the same code). Prints the figures as JSON; exit status 1 when a check
failed.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

from tests.support.load import run


def main() -> None:
    """Command line: run the phases and print the figures as JSON."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--seconds", type=float, default=60)
    ap.add_argument("--clients", type=int, default=32)
    ap.add_argument("--partitions", type=int, default=100)
    ap.add_argument("--overload-seconds", type=float, default=15)
    ap.add_argument("--overload-clients", type=int, default=256)
    ap.add_argument("--recovery-seconds", type=float, default=5)
    ap.add_argument("--max-concurrency", type=int, default=32)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--fake-model", action="store_true",
                    help="the deterministic fake embedder instead of the bundled model")
    ap.add_argument("--log", type=Path, default=None, help="keep the server's output here")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="semmem-load-") as tmp:
        figures = run(Path(tmp) / "db", fake_model=args.fake_model, seconds=args.seconds,
                      clients=args.clients, partitions=args.partitions,
                      overload_seconds=args.overload_seconds,
                      overload_clients=args.overload_clients,
                      recovery_seconds=args.recovery_seconds,
                      max_concurrency=args.max_concurrency, seed=args.seed,
                      log=args.log or Path(tmp) / "server.log")
    print(json.dumps(figures, indent=2))
    sys.exit(0 if figures["ok"] else 1)


if __name__ == "__main__":
    main()
