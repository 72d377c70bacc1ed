"""``make bench``: the benchmarks of docs/benchmarks.md, one after another, at default sizes.

    .venv/bin/python benchmarks/run_all.py [--full]

Without ``--full``: recall at 100/1k/10k facts, the write path, 1,000 partitions, HTTP under
concurrency, and object storage (about ten minutes here). ``--full`` adds 100k and 1M facts and
10,000 partitions (about an hour, several GB under ``data/``). Heavy runs never overlap: each
script runs to completion before the next starts.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--full", action="store_true")
    args = parser.parse_args()
    sizes = "100,1000,10000,100000,1000000" if args.full else "100,1000,10000"
    runs = [
        ("Recall latency vs partition size", ["recall_bench.py", "--sizes", sizes]),
        ("Write path", ["write_bench.py"]),
        ("Many partitions",
         ["partitions_bench.py", "--partitions", "10000" if args.full else "1000"]),
        ("HTTP under concurrency", ["http_load.py"]),
        ("Object storage (moto S3 on loopback)", ["s3_bench.py"]),
    ]
    for title, argv in runs:
        print(f"\n## {title}\n\n`.venv/bin/python benchmarks/{' '.join(argv)}`\n", flush=True)
        subprocess.run([sys.executable, str(HERE / argv[0]), *argv[1:]], check=True,
                       cwd=HERE.parent)


if __name__ == "__main__":
    main()
