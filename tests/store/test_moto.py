"""The S3 double the object-storage tests run on (``tests/support/moto.py``) decides a
conditional PUT as S3 does: of the PUTs racing to create one key, exactly one succeeds."""

from __future__ import annotations

import sys
import threading
from collections.abc import Iterator

import botocore.exceptions
import pytest

from tests.support.moto import client, moto_s3

BUCKET = "semmem-conditional"
RACERS = 8
KEYS = 150


@pytest.fixture
def switching() -> Iterator[None]:
    """Threads switch as often as they can: a check-then-store gap shows within a few keys."""
    was = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    try:
        yield
    finally:
        sys.setswitchinterval(was)


@pytest.mark.timeout(240)
@pytest.mark.usefixtures("switching")
def test_conditional_puts_have_one_winner() -> None:
    with moto_s3(BUCKET) as endpoint:
        clients = [client(endpoint) for _ in range(RACERS)]
        winners: dict[str, list[int]] = {}
        refused = 0

        def put(i: int, key: str, start: threading.Barrier) -> None:
            nonlocal refused
            start.wait()
            try:
                clients[i].put_object(Bucket=BUCKET, Key=key, Body=f"{i}".encode(),
                                      IfNoneMatch="*")
            except botocore.exceptions.ClientError as exc:
                assert exc.response["Error"]["Code"] == "PreconditionFailed", exc.response
                refused += 1
            else:
                winners.setdefault(key, []).append(i)

        for k in range(KEYS):
            key = f"_versions/{k:020}.manifest"
            start = threading.Barrier(RACERS)
            threads = [threading.Thread(target=put, args=(i, key, start)) for i in range(RACERS)]
            for t in threads:
                t.start()
            for t in threads:
                t.join()
        assert sorted(winners) == sorted(f"_versions/{k:020}.manifest" for k in range(KEYS))
        doubled = {key: who for key, who in winners.items() if len(who) > 1}
        assert not doubled, f"{len(doubled)} keys created twice"
        assert refused == KEYS * (RACERS - 1)
        for key, (who,) in winners.items():  # the one that succeeded is the one kept
            body = clients[0].get_object(Bucket=BUCKET, Key=key)["Body"].read()
            assert body == f"{who}".encode()
