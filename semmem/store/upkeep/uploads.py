"""Unfinished multipart uploads on S3: a process killed during a large upload (a compaction's
rewrite) leaves one that holds the rows it had sent, invisible to listings of objects and
outside every version, until it is aborted. The sweep aborts those under a table's prefix once
older than the orphan age, and dropping a partition aborts all of them.

Two S3 REST calls (ListMultipartUploads, AbortMultipartUpload) signed with AWS Signature V4
from the keys in the storage options (or ``AWS_ACCESS_KEY_ID`` / ``AWS_SECRET_ACCESS_KEY`` /
``AWS_SESSION_TOKEN``): no SDK. Without keys (an instance role) nothing is aborted here, and the
bucket's lifecycle rule (``AbortIncompleteMultipartUpload``, docs/security.md) is what removes
them.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import hmac
import http.client
import os
import xml.etree.ElementTree as ET
from dataclasses import dataclass
from urllib.parse import quote, urlsplit

_NS = "{http://s3.amazonaws.com/doc/2006-03-01/}"


@dataclass(frozen=True)
class _Target:
    scheme: str
    host: str
    bucket: str
    prefix: str
    region: str
    key: str
    secret: str
    token: str | None
    path_style: bool


def _target(uri: str, options: dict[str, str]) -> _Target | None:
    if not uri.startswith(("s3://", "s3+ddb://")):
        return None
    opts = {k.lower(): v for k, v in options.items()}
    key = opts.get("aws_access_key_id") or os.environ.get("AWS_ACCESS_KEY_ID")
    secret = opts.get("aws_secret_access_key") or os.environ.get("AWS_SECRET_ACCESS_KEY")
    if not key or not secret:
        return None
    token = opts.get("aws_session_token") or os.environ.get("AWS_SESSION_TOKEN")
    region = opts.get("aws_region") or os.environ.get("AWS_REGION") or "us-east-1"
    rest = uri.split("://", 1)[1].split("?", 1)[0]
    bucket, _, prefix = rest.partition("/")
    endpoint = opts.get("aws_endpoint") or opts.get("endpoint")
    if endpoint:
        parts = urlsplit(endpoint if "://" in endpoint else f"https://{endpoint}")
        return _Target(parts.scheme, parts.netloc, bucket, prefix.rstrip("/") + "/", region,
                       key, secret, token, True)
    return _Target("https", f"{bucket}.s3.{region}.amazonaws.com", bucket,
                   prefix.rstrip("/") + "/", region, key, secret, token, False)


def _sign(t: _Target, method: str, path: str, query: dict[str, str]) -> dict[str, str]:
    now = dt.datetime.now(dt.UTC)
    stamp, day = now.strftime("%Y%m%dT%H%M%SZ"), now.strftime("%Y%m%d")
    payload = hashlib.sha256(b"").hexdigest()
    headers = {"host": t.host, "x-amz-content-sha256": payload, "x-amz-date": stamp}
    if t.token:
        headers["x-amz-security-token"] = t.token
    canonical_query = "&".join(f"{quote(k, safe='-_.~')}={quote(v, safe='-_.~')}"
                               for k, v in sorted(query.items()))
    names = sorted(headers)
    canonical = "\n".join([method, quote(path, safe="/-_.~"), canonical_query,
                           "".join(f"{n}:{headers[n]}\n" for n in names), ";".join(names),
                           payload])
    scope = f"{day}/{t.region}/s3/aws4_request"
    to_sign = "\n".join(["AWS4-HMAC-SHA256", stamp, scope,
                         hashlib.sha256(canonical.encode()).hexdigest()])
    k = f"AWS4{t.secret}".encode()
    for part in (day, t.region, "s3", "aws4_request"):
        k = hmac.new(k, part.encode(), hashlib.sha256).digest()
    signature = hmac.new(k, to_sign.encode(), hashlib.sha256).hexdigest()
    headers["authorization"] = (f"AWS4-HMAC-SHA256 Credential={t.key}/{scope}, "
                                f"SignedHeaders={';'.join(names)}, Signature={signature}")
    return headers


def _call(t: _Target, method: str, key: str | None, query: dict[str, str]) -> bytes:
    path = f"/{t.bucket}" if t.path_style else ""
    path += f"/{key}" if key is not None else ("/" if not t.path_style else "")
    headers = _sign(t, method, path, query)
    conn_type = http.client.HTTPSConnection if t.scheme == "https" else http.client.HTTPConnection
    conn = conn_type(t.host, timeout=10)
    try:
        target = quote(path, safe="/-_.~") + "?" + "&".join(
            f"{quote(k, safe='-_.~')}={quote(v, safe='-_.~')}" if v else quote(k, safe="-_.~")
            for k, v in sorted(query.items()))
        conn.request(method, target, headers=headers)
        resp = conn.getresponse()
        body = resp.read()
        if resp.status >= 300:
            raise OSError(f"S3 {method} answered {resp.status}: {body[:200]!r}")
        return body
    finally:
        conn.close()


def unfinished(uri: str, options: dict[str, str]) -> list[tuple[str, str, dt.datetime]] | None:
    """The unfinished multipart uploads under the table at ``uri``: (key, upload id, when
    initiated); ``None`` where this cannot be asked (not S3, or no keys)."""
    t = _target(uri, options)
    if t is None:
        return None
    out: list[tuple[str, str, dt.datetime]] = []
    query = {"uploads": "", "prefix": t.prefix}
    while True:
        root = ET.fromstring(_call(t, "GET", None, query))
        for up in root.iter(f"{_NS}Upload"):
            key, uid = up.findtext(f"{_NS}Key"), up.findtext(f"{_NS}UploadId")
            when = up.findtext(f"{_NS}Initiated") or ""
            if key and uid:
                at = dt.datetime.fromisoformat(when.replace("Z", "+00:00")) if when else \
                    dt.datetime.now(dt.UTC)
                out.append((key, uid, at))
        if (root.findtext(f"{_NS}IsTruncated") or "").lower() != "true":
            return out
        query = {"uploads": "", "prefix": t.prefix,
                 "key-marker": root.findtext(f"{_NS}NextKeyMarker") or "",
                 "upload-id-marker": root.findtext(f"{_NS}NextUploadIdMarker") or ""}


def abort_unfinished(uri: str, options: dict[str, str],
                     older_than: dt.timedelta = dt.timedelta(0)) -> int | None:
    """Abort the table's unfinished uploads initiated more than ``older_than`` ago (younger
    ones may belong to an upload in progress); how many, or ``None`` when not asked."""
    found = unfinished(uri, options)
    if found is None:
        return None
    t = _target(uri, options)
    assert t is not None
    cutoff = dt.datetime.now(dt.UTC) - older_than
    aborted = 0
    for key, uid, at in found:
        if at <= cutoff:
            _call(t, "DELETE", key, {"uploadId": uid})
            aborted += 1
    return aborted
