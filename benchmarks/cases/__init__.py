"""The named cases: what each measures, its module, and the arguments of its smallest size.

A case module either has ``cli(argv) -> list[figures]`` (a case on the shared set-up: the
runner writes its result lines) or, carried over from the scripts before the suite, runs as
``__main__`` reading ``sys.argv`` and prints its own table (the runner records that output in
the same result line). ``smoke``: arguments appended in ``--smoke`` runs (argparse keeps an
option's last value, so they override the sizes a command names); ``{tmp}`` is a fresh
temporary folder, ``{repo}`` this checkout (in place of another). ``data``: the public data set
a case reads (its smoke run reads its first ``files`` files, and is skipped, with the reason,
when the folder is not there); ``needs``: a path a run needs and how to make it.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Case:
    """One named benchmark."""

    name: str
    about: str
    smoke: tuple[str, ...] = ()
    data: str = ""  # "locomo", "longmemeval", "memsim": the data set read (and required)
    python: str = ".venv"  # the venv whose interpreter runs it (".venv-client": the client's)
    files: int = 1  # the data set's files a smoke run reads
    needs: str = ""  # a path under the repository a run needs, and how to make it: "PATH: HOW"

    @property
    def module(self) -> str:
        """The case's module."""
        return f"benchmarks.cases.{self.name}"


CASES = {case.name: case for case in (
    Case("recall", "recall latency vs partition size against the floor: core, HTTP, kept "
         "stores at 1M (--keep DIR); a served process while it is written (--served)",
         ("--sizes", "30", "--reps", "3", "--tail", "5", "--remembers", "3", "--seconds", "1")),
    Case("writes", "the write path: remember and import latency, throughput",
         ("--facts", "30", "--remembers", "3", "--rounds", "1")),
    Case("ingest", "conversation ingestion: messages per second, in process and over HTTP",
         ("--messages", "10", "--rounds", "1"), data="longmemeval"),
    Case("fence", "write fences and local durability", ("--writes", "5", "--dir", "{tmp}")),
    Case("writers", "eight writers into one partition",
         ("--facts", "30", "--seconds", "1", "--writers", "1,2", "--dir", "{tmp}")),
    Case("turn_trace", "where a turn's time goes (two trees served side by side)",
         ("--facts", "30", "--turns", "10")),
    Case("update_stall", "the event loop while an update writes",
         ("--sizes", "30", "--updates", "2")),
    Case("indexed_views", "a new version past the index threshold",
         ("--size", "300", "--reps", "2", "--threshold", "200")),
    Case("forget_window", "the forget window: from forget to the text in no file",
         ("--timeout", "60")),
    Case("agent_turns", "agent turns under 1/8/32 clients",
         ("--clients", "1", "--seconds", "1", "--facts", "30")),
    Case("http_load", "HTTP under concurrency, mixed or recall-only",
         ("--users", "2", "--facts", "10", "--requests", "4", "--levels", "1,2")),
    Case("int8_eval", "an int8 copy of the ONNX model", ("--rounds", "1"), data="locomo"),
    Case("partitions", "many partitions",
         ("--partitions", "5", "--facts", "5", "--recalls", "3", "--cache-size", "4")),
    Case("encoders", "encoders: ONNX Runtime vs torch, idle and under load",
         ("--rounds", "1", "--queries", "2", "--per-level", "2", "--clients", "1",
          "--torch-threads", "1", "--onnx-threads", "1")),
    Case("mcp_recall", "recall through MCP beside HTTP",
         ("--sizes", "20", "--recalls", "3", "--fake-model")),
    Case("object_store", "object storage: requests per operation",
         ("--sizes", "5", "--reps", "1", "--delay-ms", "1")),
    Case("s3_writes", "writes to S3-compatible storage (moto on loopback)", ("--writes", "3")),
    Case("conversations", "conversations: the relevant turn within the budget",
         ("--limit", "1", "--budgets", "1024", "--in-process"), data="longmemeval"),
    Case("pieces_recall", "recall over conversation pieces", ("--items", "300", "--queries", "3")),
    Case("indexed_quality", "reading through the index: quality", (), data="locomo"),
    Case("consolidation", "write-time hints and owners' groups",
         ("--sample", "2", "--facts", "30", "--reps", "1"), data="locomo"),
    Case("retention", "retention: recall with expiring facts", ("--size", "30", "--recalls", "3")),
    Case("backup", "backups: create, verify, restore under load",
         ("--partitions", "2", "--facts", "10", "--clients", "1", "--changed", "1",
          "--forget", "4")),
    Case("quiet_hints", "quiet hints on dense memories", (), data="locomo", files=3),
    Case("tracing_off", "recall p50 with tracing off, on, and before tracing",
         ("--facts", "20", "--reps", "3", "--rounds", "1", "--base", "{repo}")),
    Case("index_kinds", "index kinds, the unindexed tail",
         ("--sizes", "300", "--queries", "3", "--dir", "{tmp}")),
    Case("evolve", "update and forget past the index threshold",
         ("--sizes", "30", "--ops", "2")),
    Case("recent", "blank-input recall (the newest) at large sizes",
         ("--sizes", "300", "--reps", "2")),
    Case("candidate_reads", "what a recall reads of its candidates (file format, columns)",
         ("--rows", "300", "--fragment-rows", "100", "--reps", "2", "--dir", "{tmp}")),
    Case("filtered", "filtered search", ("--size", "300", "--rounds", "2", "--threshold", "200")),
    Case("arguments", "refusing oversized tool arguments", ("--senders", "2", "--rounds", "2")),
    Case("langgraph_store", "LangGraph's store API: SemmemStore beside InMemoryStore",
         ("--items", "20", "--reads", "2", "--puts", "2"), python=".venv-client",
         needs=".venv-client/bin/python: make client-test (the client's venv)"),
    Case("multilingual", "the multilingual model on MemSim and LoCoMo", (), data="memsim"),
    Case("typescript", "what the TypeScript client adds to a recall (node)", ("--smoke",),
         needs="clients/typescript/dist: (cd clients/typescript && npm ci)"),
    Case("namespaces", "listing namespaces", ("--namespaces", "5", "--runs", "1")),
    Case("hostile", "hostile tenants: each heavy request shape beside a victim's recall",
         ("--fake-model", "--rounds", "4", "--scale", "0.01", "--store-items", "40",
          "--export-items", "40", "--max-seconds", "30")),
    Case("model_fairness", "no tenant waits behind another's model time", ("--rounds", "1")),
    Case("soak", "crash durability: kills under write load",
         ("--kills", "1", "--partitions", "2", "--clients", "1", "--fake-model")),
    Case("load", "load and overload on loopback",
         ("--seconds", "1", "--clients", "2", "--partitions", "2", "--overload-seconds", "1",
          "--overload-clients", "8", "--max-concurrency", "2", "--recovery-seconds", "1",
          "--fake-model")),
    Case("layout", "the store's layout: many small partitions", ("--partitions", "5",
                                                                  "--facts", "3")),
    Case("eval_locomo", "the ranking's evaluation on LoCoMo (tuning, leave-one-out)",
         ("--no-loo", "--quick"), data="locomo"),
)}
