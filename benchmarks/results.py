"""The one results format: a result is one JSON line holding the case, the command that
produced it, the commit, the machine (cores, memory, CPU model, load), the time, and the
case's figures. Imports nothing of semmem (a case may run in the client's venv)."""

from __future__ import annotations

import contextlib
import os
import platform
import subprocess
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent


def commit() -> str:
    """The checked-out commit (short), ``+changes`` when the work tree differs from it."""
    def git(*args: str) -> str:
        done = subprocess.run(["git", *args], cwd=REPO, capture_output=True, text=True)
        return done.stdout.strip() if done.returncode == 0 else ""

    head = git("rev-parse", "--short", "HEAD") or "unknown"
    return head + ("+changes" if git("status", "--porcelain", "--untracked-files=no") else "")


def machine() -> dict[str, Any]:
    """Cores, memory, CPU model and the load average at the time of the run."""
    cpu = platform.processor() or platform.machine()
    with contextlib.suppress(OSError):
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    memory_gb = 0.0
    with contextlib.suppress(OSError, ValueError, IndexError):
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal:"):
                memory_gb = round(int(line.split()[1]) / 1024 / 1024, 1)
    load = [round(x, 2) for x in os.getloadavg()] if hasattr(os, "getloadavg") else []
    return {"cores": os.cpu_count(), "memory_gb": memory_gb, "cpu": cpu,
            "load": load, "python": platform.python_version()}


def record(case: str, command: str, figures: dict[str, Any]) -> dict[str, Any]:
    """One result line's content."""
    return {"case": case, "command": command, "commit": commit(), "machine": machine(),
            "at": datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"), "figures": figures}
