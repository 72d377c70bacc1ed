"""moto's S3 server on loopback, with S3's conditional writes made atomic.

S3 decides a conditional PUT (``If-None-Match: *``, ``If-Match``) and stores the object as one
step; Lance's commits rely on it (the manifest of a version is written only if absent). moto 5
checks the condition and then stores, in separate steps on its request threads: two PUTs of one
manifest racing there can both succeed, the later one silently replacing a version the earlier
writer was told it committed. Here every PUT and multipart completion is decided and stored under
one lock, as S3 does (``test_conditional_puts_have_one_winner`` shows the race it closes).
"""

from __future__ import annotations

import functools
import logging
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import boto3
from moto.s3.responses import S3Response
from moto.server import ThreadedMotoServer

_WRITES = threading.Lock()


def _atomic(method: Callable[..., Any]) -> Callable[..., Any]:
    if getattr(method, "atomic", False):
        return method

    @functools.wraps(method)
    def decided_and_stored(self: S3Response, *args: Any, **kwargs: Any) -> Any:
        with _WRITES:
            return method(self, *args, **kwargs)

    decided_and_stored.atomic = True  # type: ignore[attr-defined]
    return decided_and_stored


def atomic_conditional_writes() -> None:
    """Decide and store each PUT (and multipart completion) of moto's S3 as one step."""
    S3Response.put_object = _atomic(S3Response.put_object)  # type: ignore[method-assign]
    S3Response._key_response_post = _atomic(  # type: ignore[method-assign]
        S3Response._key_response_post)


def options(endpoint: str) -> dict[str, str]:
    """LanceDB storage options for moto at ``endpoint``."""
    return {"aws_access_key_id": "test", "aws_secret_access_key": "test",
            "aws_region": "us-east-1", "aws_endpoint": endpoint, "allow_http": "true"}


def client(endpoint: str) -> Any:
    """A boto3 S3 client of moto at ``endpoint``."""
    return boto3.client("s3", endpoint_url=endpoint, aws_access_key_id="test",
                        aws_secret_access_key="test", region_name="us-east-1")


def objects(endpoint: str, bucket: str, prefix: str) -> dict[str, bytes]:
    """Every object of ``bucket`` under ``prefix``, by key: its bytes as stored."""
    s3 = client(endpoint)
    keys = [o["Key"] for page in s3.get_paginator("list_objects_v2").paginate(
        Bucket=bucket, Prefix=prefix) for o in page.get("Contents", [])]
    return {k: s3.get_object(Bucket=bucket, Key=k)["Body"].read() for k in keys}


@contextmanager
def moto_s3(*buckets: str) -> Iterator[str]:
    """moto's S3 server on 127.0.0.1 (in this process) holding ``buckets``; yields its
    endpoint."""
    atomic_conditional_writes()
    logging.getLogger("werkzeug").setLevel(logging.ERROR)  # one log line per request otherwise
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    endpoint = f"http://{host}:{port}"
    for bucket in buckets:
        client(endpoint).create_bucket(Bucket=bucket)
    try:
        yield endpoint
    finally:
        server.stop()
