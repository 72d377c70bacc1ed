"""What the TypeScript client adds to a recall: ``typescript_client.mjs`` under node, against
``semmem serve`` on this interpreter (the fake embedder) and an in-process stub.

    (cd clients/typescript && npm ci)     # builds dist/
    .venv/bin/python -m benchmarks typescript [--n 2000]
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]


def main() -> None:
    """Run the node script; its table goes to standard output."""
    parser = argparse.ArgumentParser(prog="python -m benchmarks typescript")
    parser.add_argument("--n", type=int, default=2000, help="recalls each way")
    parser.add_argument("--smoke", action="store_true", help="10 recalls each way")
    args = parser.parse_args()
    node = shutil.which("node")
    if node is None:
        raise SystemExit("typescript: node is not on PATH")
    if not (REPO / "clients" / "typescript" / "dist").is_dir():
        raise SystemExit("typescript: clients/typescript/dist is not built: "
                         "(cd clients/typescript && npm ci)")
    env = {**os.environ, "SEMMEM_SERVER_PYTHON": sys.executable}
    done = subprocess.run([node, str(HERE / "typescript_client.mjs"),
                           "--n", str(10 if args.smoke else args.n)],
                          cwd=REPO, env=env, capture_output=True, text=True)
    sys.stdout.write(done.stdout)
    if done.returncode != 0:
        raise SystemExit(f"typescript: node exited {done.returncode}: {done.stderr[-2000:]}")


if __name__ == "__main__":
    main()
