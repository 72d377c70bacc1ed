#!/usr/bin/env bash
# Smoke test of the Docker image with no network at all.
#
#   scripts/docker-smoke.sh            build the image, then test it
#   SEMMEM_SMOKE_BUILD=0 scripts/docker-smoke.sh   test an existing image
#
# Builds the image (the build alone uses the network: --network host), runs it with
# --network none (read-only root, no capabilities, tokens from a mounted secrets file) and,
# *inside* that container over 127.0.0.1, drives remember -> recall -> search -> forget through
# the HTTP memory provider contract. Then it removes the container, starts a new one on the same
# named volume and checks that the memory survived (and that numbers are not reused); both
# containers' logs must hold no warning, error or traceback (after a maintenance cycle). Prints the
# image size, the start-up time to ready and the first-recall latency. Exits non-zero on any
# failure. Environment: SEMMEM_SMOKE_IMAGE (default semmem:smoke), SEMMEM_SMOKE_BUILD (1),
# SEMMEM_SMOKE_BUILD_ARGS (extra `docker build` arguments, quoted as in a shell, e.g.
# --build-arg MODELS="all-MiniLM-L6-v2 multilingual-e5-small"),
# SEMMEM_SMOKE_KEEP=1 keeps the volume and prints its name, SEMMEM_SMOKE_MODEL serves another
# model built into the image (e.g. /opt/semmem/models/multilingual-e5-small).
set -euo pipefail
cd "$(dirname "$0")/.."

IMAGE=${SEMMEM_SMOKE_IMAGE:-semmem:smoke}
run_id="$$-$(date +%s)"
volume="semmem-smoke-$run_id"
secrets_dir=$(mktemp -d)
containers=()

say() { printf 'smoke: %s\n' "$*"; }
fail() { printf 'smoke: FAIL: %s\n' "$*" >&2; exit 1; }
now_ms() { echo $(( $(date +%s%N) / 1000000 )); }

cleanup() {
  local status=$?
  for c in "${containers[@]}"; do
    if [ "$status" -ne 0 ] && docker container inspect "$c" >/dev/null 2>&1; then
      printf -- '--- last log lines of %s ---\n' "$c" >&2
      docker logs --tail 40 "$c" >&2 2>&1 || true
    fi
    docker rm -f "$c" >/dev/null 2>&1 || true
  done
  if [ "${SEMMEM_SMOKE_KEEP:-0}" = 1 ]; then
    say "kept volume $volume"
  else
    docker volume rm "$volume" >/dev/null 2>&1 || true
  fi
  rm -rf "$secrets_dir"
  [ "$status" -eq 0 ] && say "PASS" || printf 'smoke: FAILED (exit %s)\n' "$status" >&2
}
trap cleanup EXIT

# The client that runs inside the container: standard library only, loopback only.
read -r -d '' CLIENT <<'PY' || true
import json, os, socket, sys, time, urllib.error, urllib.request
from datetime import datetime, timedelta, timezone

BASE = "http://127.0.0.1:%s" % os.environ.get("SEMMEM_PORT", "8080")
URL = BASE + os.environ.get("SEMMEM_PATH", "/memory")
PARTITION = "ocmem_v1_docker-smoke"


def token():
    with open(os.environ["SEMMEM_TOKENS_FILE"], encoding="utf-8") as fh:
        return next(l.strip() for l in fh if l.strip() and not l.lstrip().startswith("#"))


def call(path, body=None, bearer=None):
    headers = {"Content-Type": "application/json"}
    if bearer:
        headers["Authorization"] = "Bearer " + bearer
    data = None if body is None else json.dumps(body).encode()
    req = urllib.request.Request(path, data=data, headers=headers,
                                 method="GET" if body is None else "POST")
    try:
        with urllib.request.urlopen(req, timeout=30) as resp:
            status, raw = resp.status, resp.read()
    except urllib.error.HTTPError as err:
        status, raw = err.code, err.read()
    return status, (json.loads(raw) if raw else None)


def envelope(operation, op_id, **fields):
    deadline = datetime.now(timezone.utc) + timedelta(seconds=10)
    return {"version": 1, "operation": operation, "operationId": op_id,
            "partition": PARTITION, "access": "read-write",
            "deadlineAt": deadline.isoformat(timespec="milliseconds").replace("+00:00", "Z"),
            **fields}


def tool(name, op_id, arguments, cursor=None):
    extra = {"cursor": cursor} if cursor else {}
    return call(URL, envelope("tool", op_id, tool=name, arguments=arguments, **extra), token())


def recall(op_id, text, max_bytes=1024):
    return call(URL, envelope("recall", op_id, input={"text": text}, maxBytes=max_bytes), token())


def expect(ok, what, got):
    if not ok:
        print("FAIL: %s; got %s" % (what, json.dumps(got)[:600]), file=sys.stderr)
        sys.exit(1)
    print("  ok  " + what)


def wait(timeout_s):
    start = time.monotonic()
    while time.monotonic() - start < timeout_s:
        try:
            if call(BASE + "/readyz")[0] == 200:
                print("%d" % ((time.monotonic() - start) * 1000))
                return
        except (urllib.error.URLError, ConnectionError, TimeoutError):
            pass
        time.sleep(0.1)
    sys.exit("not ready after %ss" % timeout_s)


FACTS = [
    "Bob prefers metric units.",
    "Alice's cat is called Miso and is afraid of the vacuum cleaner.",
    "The team deploys the billing service every Tuesday at noon.",
]


def roundtrip():
    names = [name for _, name in socket.if_nameindex()]
    expect(names == ["lo"], "the container has no network interface but loopback", names)
    status, body = call(BASE + "/healthz")
    expect(status == 200, "GET /healthz -> 200", [status, body])
    status, body = call(URL, envelope("recall", "r-noauth", input={"text": "x"}, maxBytes=64),
                        "not-the-token")
    expect(status == 401 and body["error"]["code"] == "unauthorized",
           "a wrong token -> 401 unauthorized", [status, body])
    for i, fact in enumerate(FACTS, start=1):
        status, body = tool("remember", "t-remember-%d" % i, {"text": fact})
        expect(status == 200 and body["result"]["status"] == "stored"
               and body["result"]["n"] == i, "remember #%d -> stored, n=%d" % (i, i),
               [status, body])
    started = time.perf_counter()
    status, body = recall("r-1", "What is the name of Alice's pet?")
    first_recall_ms = (time.perf_counter() - started) * 1000
    expect(status == 200 and body["text"].split("\n")[0] == "2. " + FACTS[1]
           and body["sources"][0]["id"] == "2" and body.get("cursor"),
           "recall 'name of Alice's pet' -> item 2 first, with a cursor", [status, body])
    cursor = body["cursor"]
    status, body = tool("search", "t-search", {"query": "when do we ship billing releases",
                                               "limit": 5})
    expect(status == 200 and body["result"]["count"] == 3
           and body["result"]["items"][0]["n"] == 3,
           "search 'when do we ship billing releases' -> item 3 first, count 3", [status, body])
    status, body = tool("forget", "t-forget", {"n": 2}, cursor)
    expect(status == 200 and body["result"] == {"status": "stored", "n": 2, "count": 2,
                                                "forgotten": True},
           "forget 2 (with the recall's cursor) -> stored, forgotten", [status, body])
    status, body = recall("r-2", "What is the name of Alice's pet?")
    expect(status == 200 and "Miso" not in body["text"]
           and all(s["id"] != "2" for s in body["sources"]),
           "recall after forget -> item 2 gone", [status, body])
    timings = []  # distinct queries: a repeated one would come from the query cache
    for i, query in enumerate(["which units does Bob like?", "when is the billing release?",
                               "does anyone have pets?", "what day do we deploy?",
                               "kilometres or miles?"]):
        started = time.perf_counter()
        status, _ = recall("r-warm-%d" % i, query)
        timings.append((time.perf_counter() - started) * 1000)
        expect(status == 200, "recall %r -> 200" % query, status)
    print("first_recall_ms=%.0f warm_recall_median_ms=%.0f"
          % (first_recall_ms, sorted(timings)[len(timings) // 2]))


def survived():
    status, body = recall("r-3", None)
    ids = [s["id"] for s in body.get("sources", [])] if status == 200 else None
    expect(status == 200 and ids == ["3", "1"] and "Miso" not in body["text"],
           "recall (no input) in a new container -> items 3 and 1, newest first; 2 stays gone",
           [status, body])
    status, body = tool("search", "t-search-2", {"query": "metric units", "limit": 5})
    expect(status == 200 and body["result"]["count"] == 2
           and body["result"]["items"][0]["text"] == FACTS[0],
           "search 'metric units' -> item 1, count 2", [status, body])
    status, body = tool("remember", "t-remember-4", {"text": "Carol is allergic to peanuts."})
    expect(status == 200 and body["result"]["n"] == 4,
           "remember after restart -> n=4 (forgotten numbers are never reused)", [status, body])


{"wait": lambda: wait(float(sys.argv[2])), "roundtrip": roundtrip,
 "survived": survived}[sys.argv[1]]()
PY

start_container() {  # name -> sets ready_ms, the time from `docker run` to /readyz 200
  local name=$1 t0
  containers+=("$name")
  t0=$(now_ms)
  docker run -d --name "$name" --network none \
    --read-only --tmpfs /tmp --cap-drop ALL --security-opt no-new-privileges \
    -v "$volume:/data" \
    -v "$secrets_dir/tokens:/run/secrets/semmem_tokens:ro" \
    -e SEMMEM_TOKENS_FILE=/run/secrets/semmem_tokens \
    ${SEMMEM_SMOKE_MODEL:+-e SEMMEM_MODEL=$SEMMEM_SMOKE_MODEL} \
    --health-interval 2s --health-start-period 120s \
    "$IMAGE" >/dev/null
  docker exec -i "$name" python - wait 180 <<<"$CLIENT" >/dev/null \
    || fail "$name did not become ready"
  ready_ms=$(( $(now_ms) - t0 ))
}

check_logs() {  # name -> fails on any warning, error or traceback in the container's output
  local bad
  bad=$(docker logs "$1" 2>&1 | grep -E 'WARNING|ERROR|CRITICAL|Traceback| WARN ' || true)
  [ -z "$bad" ] || { echo "$bad" >&2; fail "$1 logged warnings or errors"; }
}

if [ "${SEMMEM_SMOKE_BUILD:-1}" = 1 ]; then
  say "building $IMAGE (docker build --network host)"
  t0=$(now_ms)
  # SEMMEM_SMOKE_BUILD_ARGS is split as the shell splits words, quotes kept:
  # '--build-arg MODELS="all-MiniLM-L6-v2 multilingual-e5-small"' is two arguments.
  eval "build_args=(${SEMMEM_SMOKE_BUILD_ARGS:-})"
  docker build --network host "${build_args[@]}" -t "$IMAGE" . >"$secrets_dir/build.log" 2>&1 \
    || { tail -30 "$secrets_dir/build.log" >&2; fail "docker build"; }
  say "built in $(( ($(now_ms) - t0) / 1000 )) s"
fi
size_bytes=$(docker image inspect -f '{{.Size}}' "$IMAGE") || fail "no image $IMAGE"

head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n' >"$secrets_dir/tokens"
# Readable by the image's user (uid 10001) alone: a file others can read logs a warning.
chown 10001 "$secrets_dir/tokens" || fail "chown 10001 the tokens file (run as root)"
chmod 0400 "$secrets_dir/tokens"
docker volume create "$volume" >/dev/null

say "run 1: docker run --network none on volume $volume"
start_container "semmem-smoke-$run_id-1"
ready_1=$ready_ms
[ "$(docker inspect -f '{{.HostConfig.NetworkMode}}' "semmem-smoke-$run_id-1")" = none ] \
  || fail "container is not on --network none"
[ "$(docker exec "semmem-smoke-$run_id-1" id -u)" != 0 ] || fail "the server runs as root"
say "ready after ${ready_1} ms; round trip inside the container over 127.0.0.1:"
out=$(docker exec -i "semmem-smoke-$run_id-1" python - roundtrip <<<"$CLIENT") \
  || { echo "$out"; fail "round trip"; }
echo "$out" | grep -v '^first_recall_ms='
latency=$(echo "$out" | sed -n 's/^first_recall_ms=//p')

# The forget schedules a purge (retention + delay, then a follow-up): let a maintenance cycle
# with its orphan sweep run, then require a clean log.
say "waiting 30 s for a maintenance cycle"
sleep 30
check_logs "semmem-smoke-$run_id-1"

for _ in $(seq 1 60); do
  health=$(docker inspect -f '{{.State.Health.Status}}' "semmem-smoke-$run_id-1")
  [ "$health" = healthy ] && break
  sleep 1
done
[ "$health" = healthy ] || fail "HEALTHCHECK status is '$health', not healthy"
say "HEALTHCHECK reports healthy"

t0=$(now_ms)
docker stop -t 30 "semmem-smoke-$run_id-1" >/dev/null
stop_ms=$(( $(now_ms) - t0 ))
code=$(docker inspect -f '{{.State.ExitCode}}' "semmem-smoke-$run_id-1")
say "stopped in ${stop_ms} ms (exit code $code); removing it and starting a new container on the same volume"
docker rm "semmem-smoke-$run_id-1" >/dev/null

start_container "semmem-smoke-$run_id-2"
ready_2=$ready_ms
say "run 2 ready after ${ready_2} ms:"
docker exec -i "semmem-smoke-$run_id-2" python - survived <<<"$CLIENT" || fail "memory did not survive"
check_logs "semmem-smoke-$run_id-2"

first_ms=${latency%% *}
warm_ms=${latency##*=}
say "-------------------------------------------------------------"
say "image:                 $IMAGE, $(( size_bytes / 1000000 )) MB"
say "start-up to ready:     ${ready_1} ms (first run), ${ready_2} ms (after restart)"
say "first-recall latency:  ${first_ms} ms (warm recall median: ${warm_ms} ms)"
say "graceful stop:         ${stop_ms} ms, exit code ${code}"
