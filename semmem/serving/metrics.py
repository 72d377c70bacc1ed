"""Prometheus metrics of one app (own registry, so several apps can live in one process)."""

from __future__ import annotations

import hashlib

from prometheus_client import (
    CONTENT_TYPE_LATEST,
    CollectorRegistry,
    Counter,
    Gauge,
    Histogram,
    generate_latest,
)

from semmem.protocol.tools import BY_NAME

OPERATIONS = ("recall", "tool", "admin", "mcp")
# recall is a tool over MCP; its prompt and resources are counted under their own labels
TOOLS = (*BY_NAME, "recall", "prompt", "resources")
BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)


def _digest(partition: str) -> int:
    raw = hashlib.blake2b(partition.encode("utf-8", "surrogatepass"), digest_size=8).digest()
    return int.from_bytes(raw, "big")


class Metrics:
    """Request counts by operation/tool/status, latencies, items stored, requests in flight."""

    content_type = CONTENT_TYPE_LATEST

    def __init__(self) -> None:
        self.registry = CollectorRegistry()
        self.requests = Counter(
            "semmem_requests", "Provider and admin requests answered",
            ["operation", "tool", "status"], registry=self.registry,
        )
        self.latency = Histogram(
            "semmem_request_seconds", "Time to answer a request",
            ["operation", "tool"], buckets=BUCKETS, registry=self.registry,
        )
        self.in_flight = Gauge(
            "semmem_requests_in_flight", "Requests being served now", registry=self.registry
        )
        self.items = Gauge(
            "semmem_items_stored",
            "Live items in the partitions this process has written or searched since it started",
            registry=self.registry,
        )
        self.writes = Counter(
            "semmem_writes", "Committed or replayed write tool calls", ["tool"],
            registry=self.registry,
        )
        self.rate_limited = Counter(
            "semmem_rate_limited", "Requests refused because their token was over its rate",
            ["surface"], registry=self.registry,
        )
        # Each non-empty partition's last count, keyed by an 8-byte digest of its name: never
        # the caller's string, and nothing for a partition that holds nothing (a search on a
        # key that does not exist), so this grows with the store, not with requests.
        self._counts: dict[int, int] = {}
        self._total = 0

    def observe(self, operation: str, tool: str, status: int, seconds: float) -> None:
        """Count one answered request. Labels only take known values (never caller strings)."""
        operation = operation if operation in OPERATIONS else "invalid"
        tool = tool if tool in TOOLS else ""
        self.requests.labels(operation, tool, str(status)).inc()
        self.latency.labels(operation, tool).observe(seconds)

    def partition_count(self, partition: str, count: object) -> None:
        """Record a partition's item count, as reported by a write or a search."""
        if isinstance(count, int) and not isinstance(count, bool):
            key = _digest(partition)
            if count > 0:
                self._total += count - self._counts.get(key, 0)
                self._counts[key] = count
            else:
                self._total -= self._counts.pop(key, 0)
            self.items.set(self._total)

    def forget_partition(self, partition: str) -> None:
        """Drop a deleted partition from the items gauge."""
        self._total -= self._counts.pop(_digest(partition), 0)
        self.items.set(self._total)

    def render(self) -> bytes:
        """The text exposition format."""
        return bytes(generate_latest(self.registry))
