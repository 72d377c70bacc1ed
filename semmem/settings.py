"""One typed settings object (env prefix ``SEMMEM_``), built at start-up and passed down."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Literal

from pydantic import Field, field_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

from semmem.embedding.files import default_model_dir
from semmem.lifecycle.retention import parse_policy
from semmem.ranking.similar import SIMILAR_THRESHOLD

DEFAULT_DATA = "semmem-data"  # relative: a symbolic link found there is refused (store/modes.py)


class Settings(BaseSettings):
    """Everything configurable; each field is also the env variable ``SEMMEM_<NAME>``."""

    model_config = SettingsConfigDict(env_prefix="SEMMEM_", extra="ignore")

    # store
    data: str = Field(DEFAULT_DATA, min_length=1,
                      description="LanceDB URI: a local directory or s3://…")
    storage_options: dict[str, str] = Field(
        default_factory=dict, description="LanceDB storage options (JSON), e.g. S3 endpoint"
    )
    read_consistency_ms: int = Field(
        0, ge=0, description="how stale a read may be; 0 = always check for newer versions"
    )
    cache_size: int = Field(256, ge=1, description="open partitions kept in memory (LRU)")
    version_retention_s: float = Field(
        10.0, ge=0, description="old table versions kept this long before cleanup"
    )
    orphan_age_s: float = Field(
        600.0, ge=0, description="unreferenced data files (a killed write's) deleted this old; "
        "keep far above the longest write (0 only with no other writer)"
    )
    max_clock_skew_s: float = Field(
        1.0, ge=0, le=60, description="the most the clocks of the store's processes (and its "
        "storage) may differ; version retention is at least 3 s + twice this"
    )
    maintenance_delay_s: float = Field(
        2.0, ge=0, description="coalescing delay before maintenance after writes"
    )
    compact_every: int = Field(32, ge=2, description="compact a partition at this many fragments")
    index_threshold: int = Field(
        50_000, ge=1, description="rows past which a partition gets an ANN vector index"
    )
    index_candidates: int = Field(
        100, ge=1, description="candidates read from the ANN index per search, and per recall "
                               "at most (fewer for small budgets: one per 40 bytes, at least 50)"
    )
    cache_bytes: int = Field(
        1 << 30, ge=1 << 20, description="bytes of LanceDB's index and metadata caches"
    )
    cache_items: int = Field(
        2_000_000, ge=1, description="items held in cached snapshots across partitions"
    )
    backup_to: str | None = Field(
        None, description="where `POST /admin/backups` writes: a directory or s3://…"
    )
    idempotency_ttl_s: int = Field(86_400, ge=1, description="keep write records this long")
    retention: str | None = Field(
        None, description="how long a fact lives after its last write by default: 45s, 30m, "
        "12h, 90d or never (unset: forever); partitions may override it"
    )
    retention_sweep_s: float = Field(
        3600.0, gt=0, description="how often expired facts are forgotten (and once at start)"
    )
    tool_expiry: bool = Field(
        False, description="the remember tool takes an optional expires_at (changes the "
        "declared tools)"
    )
    tool_metadata: bool = Field(
        False, description="remember and update take optional metadata and search a filter "
        "(changes the declared tools)"
    )

    # model and ranking
    model: Path = Field(default_factory=default_model_dir, description="model folder")
    encoder: Literal["auto", "onnx", "torch"] = Field(
        "auto", description="onnx, torch (the reference), or auto: onnx once set-up verified it"
    )
    torch_threads: int | None = Field(None, ge=1, description="CPU threads for the model")
    query_cache: int = Field(1024, ge=0, description="recent query embeddings cached")
    ranking: Path | None = Field(None, description="JSON ranking file (from the tuning notebook)")
    similar_threshold: float = Field(
        SIMILAR_THRESHOLD, ge=-1, le=1,
        description="least cosine of a fact listed in a write's `similar` hints (and owners' "
                    "groups); calibrated by notebooks/tune_similar.ipynb",
    )

    # server
    host: str = "127.0.0.1"
    port: int = Field(8080, ge=0, le=65535)
    path: str = Field("/memory", description="the provider endpoint path")
    tokens: str | None = Field(None, description="comma-separated bearer tokens")
    tokens_file: Path | None = Field(None, description="file with one bearer token per line")
    admin_tokens: str | None = Field(None, description="comma-separated admin tokens")
    admin_tokens_file: Path | None = None
    insecure: bool = Field(False, description="no auth (loopback only)")
    max_concurrency: int = Field(32, ge=1, description="requests served at once; more get 429")
    body_timeout_s: float = Field(
        10.0, gt=0, le=300, description="a request body must arrive within this long (408 "
        "past it); it is read before the request takes one of the concurrency slots"
    )
    head_timeout_s: float = Field(
        10.0, gt=0, le=300, description="a request head (request line and headers) must "
        "arrive within this long of its first byte, or of the connection's opening (408 past "
        "it)"
    )
    log_level: str = "info"
    log_format: Literal["text", "json"] = Field(
        "text", description="text, or json: one JSON object per line (docs/operating.md)"
    )

    # quotas and rate limits (docs/operating.md)
    partition_max_items: int | None = Field(
        None, ge=1, description="live facts a partition may hold; a write past it is refused"
    )
    partition_max_bytes: int | None = Field(
        None, ge=1, description="UTF-8 bytes of fact text a partition may hold"
    )
    rate_limit: str | None = Field(
        None, description="requests per token and replica, e.g. 20/s, 600/m; more get 429"
    )
    rate_burst: int | None = Field(
        None, ge=1, description="requests a token may send at once (default: one second's)"
    )

    # MCP (``semmem mcp`` and ``/mcp`` on ``semmem serve``)
    mcp: bool = Field(True, description="serve MCP at /mcp beside the provider endpoint")
    mcp_partition: str | None = Field(
        None, min_length=1, description="partition of `semmem mcp` (and of /mcp when insecure); "
        "default: the OS user name"
    )
    mcp_sessions_per_token: int = Field(
        8, ge=1, description="stateful MCP sessions one token may hold open at once; one more "
        "is refused (429) until one ends or idles out"
    )
    mcp_session_idle_s: float = Field(
        300.0, gt=0, description="an MCP session with no request for this long is ended"
    )
    mcp_max_bytes: int = Field(
        8192, ge=1, le=16_384, description="budget of the MCP recall tool and prompt by default"
    )

    @property
    def default_data(self) -> bool:
        """Whether the store is the default relative directory (not one the operator named)."""
        return self.data == DEFAULT_DATA

    @field_validator("retention")
    @classmethod
    def _duration(cls, value: str | None) -> str | None:
        if value is not None and value.strip():
            parse_policy(value)  # refused at start-up, not at the first read
        return value.strip() if value and value.strip() else None

    @property
    def retention_ms(self) -> int | None:
        """The default max age in milliseconds (``None``: keep forever)."""
        return None if self.retention is None else parse_policy(self.retention)

    @field_validator("storage_options", mode="before")
    @classmethod
    def _json_options(cls, value: Any) -> Any:
        if isinstance(value, str):
            return json.loads(value) if value.strip() else {}
        return value
