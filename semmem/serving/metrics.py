"""Prometheus metrics of one app (own registry, so several apps can live in one process)."""

from __future__ import annotations

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
TOOLS = (*BY_NAME, "recall")  # recall is a tool over MCP
BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)


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
        self._counts: dict[str, int] = {}

    def observe(self, operation: str, tool: str, status: int, seconds: float) -> None:
        """Count one answered request. Labels only take known values (never caller strings)."""
        operation = operation if operation in OPERATIONS else "invalid"
        tool = tool if tool in TOOLS else ""
        self.requests.labels(operation, tool, str(status)).inc()
        self.latency.labels(operation, tool).observe(seconds)

    def partition_count(self, partition: str, count: object) -> None:
        """Record a partition's item count, as reported by a write or a search."""
        if isinstance(count, int) and not isinstance(count, bool):
            self._counts[partition] = count
            self.items.set(sum(self._counts.values()))

    def forget_partition(self, partition: str) -> None:
        """Drop a deleted partition from the items gauge."""
        self._counts.pop(partition, None)
        self.items.set(sum(self._counts.values()))

    def render(self) -> bytes:
        """The text exposition format."""
        return bytes(generate_latest(self.registry))
