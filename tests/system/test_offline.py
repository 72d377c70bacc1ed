"""The real server, with the real model, in a network namespace that has only loopback.

The hub/transformers offline variables are removed from the server's environment, so what
keeps it offline is the code, not the configuration. Two guards: the namespace makes any
attempt to reach another host fail, and a ``sitecustomize`` audit hook records every
Python-level ``connect``/``getaddrinfo`` to a non-loopback address, so an attempt whose failure
the code swallowed still fails the test.

The HTTP client must share the server's namespace, so this file is also a script: pytest runs
``unshare -n python tests/system/test_offline.py DIR`` and the ``__main__`` half (stdlib only)
brings ``lo`` up, starts ``semmem serve``, drives the round trip, then starts ``semmem mcp`` on
the same store and speaks MCP to it over stdio (JSON-RPC lines), and writes every exchange as
JSON for the test to check.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]
MODEL = ROOT / "models" / "all-MiniLM-L6-v2"
PORT = 18080  # a fresh namespace has every port free
TOKEN = "offline-test-token"
PARTITION = "ocmem_v1_offline"
# Everything that could switch the hub off (or on) from outside; the server starts without it.
_STRIPPED_PREFIXES = ("HF_", "HUGGINGFACE_", "TRANSFORMERS_", "SENTENCE_TRANSFORMERS_", "SEMMEM_")

# Installed in the server process through PYTHONPATH: records attempts to reach another host.
_AUDIT_HOOK = '''
import json, os, sys

_LOG = os.environ["SEMMEM_TEST_AUDIT_LOG"]
_LOCAL = {None, "", "localhost", "127.0.0.1", "::1", "0.0.0.0", "::"}


def _host(args):
    address = args[1] if len(args) > 1 else None
    if isinstance(address, tuple) and address:
        return address[0]
    return address if isinstance(address, (str, bytes)) else None


def _hook(event, args):
    if event == "socket.getaddrinfo":
        host = args[0]
    elif event in ("socket.connect", "socket.sendto"):
        host = _host(args)
        if isinstance(args[1], (str, bytes)):  # a Unix socket path, not a host
            return
    else:
        return
    if isinstance(host, bytes):
        host = host.decode(errors="replace")
    if host in _LOCAL or (isinstance(host, str) and host.startswith("127.")):
        return
    with open(_LOG, "a") as fh:
        fh.write(f"{event} {host!r}\\n")


sys.addaudithook(_hook)


_HEAVY = ("torch", "sentence_transformers", "transformers")


def _modules(heavy):  # which process (server, MCP, driver) ran the hook, and any torch import
    with open(os.environ["SEMMEM_TEST_MODULES_LOG"], "a") as fh:
        fh.write(json.dumps({"argv": sys.argv, "heavy": heavy}) + "\\n")


def _on_import(event, args):
    if event == "import" and args[0].split(".")[0] in _HEAVY:
        _modules([args[0]])


_modules([])
sys.addaudithook(_on_import)
'''


def _namespace_prefix() -> list[str] | None:
    """``unshare -n`` (as root) or ``unshare -rn`` (unprivileged user namespace), if allowed."""
    unshare = shutil.which("unshare")
    if unshare is None:
        return None
    for prefix in ([unshare, "-n"], [unshare, "-r", "-n"]):
        probe = subprocess.run([*prefix, "true"], capture_output=True, timeout=30)
        if probe.returncode == 0:
            return prefix
    return None


def _server_env(work: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(_STRIPPED_PREFIXES)}
    hooks = work / "hooks"
    hooks.mkdir()
    (hooks / "sitecustomize.py").write_text(_AUDIT_HOOK)
    env.update(
        # The hook, then this checkout (ahead of whichever one the venv has installed).
        PYTHONPATH=os.pathsep.join([str(hooks), str(ROOT)]),
        SEMMEM_TEST_AUDIT_LOG=str(work / "audit.log"),
        SEMMEM_TEST_MODULES_LOG=str(work / "modules.log"),
        SEMMEM_DATA=str(work / "data"),
        SEMMEM_MODEL=str(MODEL),
        SEMMEM_HOST="127.0.0.1",
        SEMMEM_PORT=str(PORT),
        SEMMEM_TOKENS=TOKEN,
        HOME=str(work / "home"),  # no cache from an earlier online run can stand in
    )
    return env


@pytest.mark.model
@pytest.mark.slow
def test_roundtrip_offline_in_loopback_only_namespace(tmp_path: Path) -> None:
    """remember → recall → search → forget over HTTP, then MCP over stdio, with no network and
    no offline env; neither process imports torch."""
    if not (MODEL / "model.safetensors").is_file():
        pytest.skip("bundled model not fetched (run `make model`)")
    semmem = Path(sys.executable).parent / "semmem"
    if not semmem.is_file():
        pytest.skip(f"{semmem} not installed")
    prefix = _namespace_prefix()
    if prefix is None:
        pytest.skip("cannot create a network namespace here (unshare -n / -rn not permitted)")
    env = _server_env(tmp_path)
    done = subprocess.run(
        [*prefix, sys.executable, __file__, str(tmp_path), str(semmem)],
        env=env, capture_output=True, text=True, timeout=240,
    )
    report_file = tmp_path / "report.json"
    server_log = tmp_path / "server.log"
    log_tail = server_log.read_text(errors="replace")[-3000:] if server_log.exists() else ""
    assert done.returncode == 0 and report_file.is_file(), (
        f"driver failed ({done.returncode}):\n{done.stdout}\n{done.stderr}\n"
        f"server log:\n{log_tail}"
    )
    report = json.loads(report_file.read_text())
    ex = report["exchanges"]

    assert report["interfaces"] == ["lo"]
    assert {k for k in report["server_env"] if k.startswith(("HF_", "TRANSFORMERS_"))} == set()

    assert ex["readyz"]["status"] == 200
    assert ex["unauthorized"]["status"] == 401
    assert ex["unauthorized"]["body"]["error"]["code"] == "unauthorized"

    for step, n in (("remember_1", 1), ("remember_2", 2), ("remember_3", 3)):
        assert ex[step]["status"] == 200, ex[step]
        assert ex[step]["body"]["result"]["status"] == "stored"
        assert ex[step]["body"]["result"]["n"] == n
    assert ex["remember_3"]["body"]["result"]["count"] == 3

    recall = ex["recall"]
    assert recall["status"] == 200, recall
    first_line = recall["body"]["text"].split("\n")[0]
    assert first_line == "2. Alice's cat is called Miso and is afraid of the vacuum cleaner."
    assert recall["body"]["sources"][0]["id"] == "2"
    assert isinstance(recall["body"]["cursor"], str) and recall["body"]["cursor"]

    search = ex["search"]
    assert search["status"] == 200, search
    assert search["body"]["result"]["count"] == 3
    assert search["body"]["result"]["items"][0]["n"] == 3
    assert search["body"]["result"]["items"][0]["text"].startswith("The team deploys")

    forget = ex["forget"]
    assert forget["status"] == 200, forget
    assert forget["body"]["result"] == {"status": "stored", "n": 2, "count": 2, "forgotten": True}

    after = ex["recall_after_forget"]
    assert after["status"] == 200, after
    assert "Miso" not in after["body"]["text"]
    assert [s["id"] for s in after["body"]["sources"]] == ["3", "1"]

    mcp = report["mcp"]
    assert mcp["initialize"]["result"]["serverInfo"]["name"] == "semmem"
    assert [t["name"] for t in mcp["tools"]["result"]["tools"]] == [
        "recall", "search", "remember", "update", "forget"]
    assert mcp["remember"]["result"]["structuredContent"] == {"status": "stored", "n": 4,
                                                              "count": 3}
    recalled = mcp["recall"]["result"]
    assert not recalled["isError"], recalled
    assert recalled["content"][0]["text"].split("\n")[0] == \
        "4. Carol's dog Biscuit sleeps under the piano."
    assert mcp["stderr_has_traceback"] is False

    # the server and the MCP process ran on ONNX Runtime and never imported torch
    ran = [json.loads(line) for line in (tmp_path / "modules.log").read_text().splitlines()]
    commands = {r["argv"][1] for r in ran if len(r["argv"]) > 1 and r["argv"][0].endswith("semmem")}
    assert {"serve", "mcp"} <= commands, ran
    assert [r for r in ran if r["heavy"]] == []

    audit = tmp_path / "audit.log"
    attempts = audit.read_text() if audit.exists() else ""
    assert attempts == "", f"the server tried to reach other hosts:\n{attempts}"


# --- the half that runs inside the namespace (standard library only) -------------------------


def _bring_loopback_up() -> list[str]:
    """Set IFF_UP on ``lo`` (no `ip` binary needed); return the namespace's interfaces."""
    import fcntl
    import socket
    import struct

    siocgifflags, siocsifflags, iff_up = 0x8913, 0x8914, 0x1
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
        got = fcntl.ioctl(sock, siocgifflags, struct.pack("16sH14x", b"lo", 0))
        flags = struct.unpack("16sH14x", got)[1]
        fcntl.ioctl(sock, siocsifflags, struct.pack("16sH14x", b"lo", flags | iff_up))
    return [name for _, name in socket.if_nameindex()]


def _post(url: str, body: dict[str, Any] | None, token: str | None) -> dict[str, Any]:
    import urllib.error
    import urllib.request

    headers = {"Content-Type": "application/json"}
    if token is not None:
        headers["Authorization"] = f"Bearer {token}"
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(url, data=data, headers=headers,
                                     method="GET" if body is None else "POST")
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            status, raw = response.status, response.read()
    except urllib.error.HTTPError as err:
        status, raw = err.code, err.read()
    try:
        parsed: Any = json.loads(raw) if raw else None
    except ValueError:
        parsed = raw.decode(errors="replace")
    return {"status": status, "body": parsed}


def _envelope(operation: str, op_id: str, **fields: Any) -> dict[str, Any]:
    from datetime import UTC, datetime, timedelta

    deadline = datetime.now(UTC) + timedelta(seconds=10)
    return {
        "version": 1,
        "operation": operation,
        "operationId": op_id,
        "partition": PARTITION,
        "access": "read-write",
        "deadlineAt": deadline.isoformat(timespec="milliseconds").replace("+00:00", "Z"),
        **fields,
    }


def _wait_ready(base: str, server: subprocess.Popen[bytes], timeout_s: float) -> dict[str, Any]:
    import urllib.error

    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if server.poll() is not None:
            raise RuntimeError(f"server exited with {server.returncode} before it was ready")
        try:
            got = _post(f"{base}/readyz", None, None)
            if got["status"] == 200:
                return got
        except (urllib.error.URLError, ConnectionError, TimeoutError):
            pass
        time.sleep(0.2)
    raise RuntimeError("server not ready in time")


def _mcp_stdio(work: Path, semmem: str) -> dict[str, Any]:
    """``semmem mcp`` on the same store: handshake, tools, remember, recall (JSON-RPC lines)."""
    import queue
    import threading

    errors = work / "mcp.log"
    with errors.open("wb") as sink:
        proc = subprocess.Popen([semmem, "mcp", "--partition", PARTITION], stdin=subprocess.PIPE,
                                stdout=subprocess.PIPE, stderr=sink, text=True)
    assert proc.stdin is not None and proc.stdout is not None
    lines: queue.Queue[str] = queue.Queue()

    def read() -> None:  # a thread, so that a silent server times the test out, not hangs it
        for line in proc.stdout or ():
            lines.put(line)

    threading.Thread(target=read, daemon=True).start()

    def rpc(method: str, params: dict[str, Any] | None = None, rid: int | None = None) -> Any:
        message: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
        if params is not None:
            message["params"] = params
        if rid is not None:
            message["id"] = rid
        assert proc.stdin is not None
        proc.stdin.write(json.dumps(message) + "\n")
        proc.stdin.flush()
        while rid is not None:  # skip anything that is not this request's answer
            reply = json.loads(lines.get(timeout=180))
            if reply.get("id") == rid:
                return reply
        return None

    out: dict[str, Any] = {}
    try:
        out["initialize"] = rpc("initialize", {
            "protocolVersion": "2025-11-25", "capabilities": {},
            "clientInfo": {"name": "offline-test", "version": "1"}}, 1)
        rpc("notifications/initialized")
        out["tools"] = rpc("tools/list", {}, 2)
        out["remember"] = rpc("tools/call", {"name": "remember", "arguments": {
            "text": "Carol's dog Biscuit sleeps under the piano."}}, 3)
        out["recall"] = rpc("tools/call", {"name": "recall", "arguments": {
            "text": "What is the name of Carol's dog?", "max_bytes": 1024}}, 4)
    finally:
        proc.stdin.close()
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
    out["stderr_has_traceback"] = "Traceback" in errors.read_text(errors="replace")
    return out


def _drive(work: Path, semmem: str) -> None:
    """Inside the namespace: start the server, run the round trip, write report.json."""
    interfaces = _bring_loopback_up()
    base = f"http://127.0.0.1:{PORT}"
    url = f"{base}/memory"
    log = (work / "server.log").open("wb")
    server = subprocess.Popen([semmem, "serve"], stdout=log, stderr=subprocess.STDOUT)
    ex: dict[str, Any] = {}
    try:
        ex["readyz"] = _wait_ready(base, server, timeout_s=180)

        def tool(name: str, op: str, args: dict[str, Any], cursor: str | None = None) -> Any:
            extra = {"cursor": cursor} if cursor else {}
            return _post(url, _envelope("tool", op, tool=name, arguments=args, **extra), TOKEN)

        def recall(op: str, text: str | None) -> Any:
            return _post(url, _envelope("recall", op, input={"text": text}, maxBytes=1024), TOKEN)

        ex["unauthorized"] = _post(url, _envelope("recall", "r0", input={"text": "x"},
                                                  maxBytes=64), "wrong-token")
        ex["remember_1"] = tool("remember", "t1", {"text": "Bob prefers metric units."})
        ex["remember_2"] = tool("remember", "t2", {
            "text": "Alice's cat is called Miso and is afraid of the vacuum cleaner."})
        ex["remember_3"] = tool("remember", "t3", {
            "text": "The team deploys the billing service every Tuesday at noon."})
        ex["recall"] = recall("r1", "What is the name of Alice's pet?")
        ex["search"] = tool("search", "t4", {"query": "when do we ship billing releases",
                                             "limit": 5})
        cursor = (ex["recall"]["body"] or {}).get("cursor")
        ex["forget"] = tool("forget", "t5", {"n": 2}, cursor)
        ex["recall_after_forget"] = recall("r2", None)
    finally:
        server.terminate()
        try:
            server.wait(timeout=30)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()
        log.close()
    mcp = _mcp_stdio(work, semmem)  # after the server stopped: one model in memory at a time
    server_env = sorted(k for k in os.environ if k.startswith(("HF_", "TRANSFORMERS_")))
    report = {"interfaces": interfaces, "server_env": server_env, "exchanges": ex, "mcp": mcp}
    (work / "report.json").write_text(json.dumps(report, indent=2))


if __name__ == "__main__":
    _drive(Path(sys.argv[1]), sys.argv[2])
