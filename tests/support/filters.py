"""A filter computed by brute force from an export's wire form: what filtered reads are
checked against."""

from __future__ import annotations

import operator
from typing import Any

from semmem.items import parse_iso

_BOUNDS = {"gte": operator.ge, "gt": operator.gt, "lte": operator.le, "lt": operator.lt}


def brute(exported: list[dict[str, Any]], raw: dict[str, Any]) -> set[int]:
    """The numbers of the exported records the filter ``raw`` (its JSON form) covers."""
    out = set()
    for rec in exported:
        meta = rec.get("metadata", {})
        # equal as JSON values: 2 = 2.0, but true is no number
        ok = all(k in meta and isinstance(meta[k], bool) == isinstance(v, bool) and meta[k] == v
                 for k, v in raw.get("metadata", {}).items())
        for name in ("updated", "ts"):
            at = parse_iso(rec[name])
            ok = ok and all(_BOUNDS[op](at, parse_iso(bound))
                            for op, bound in (raw.get(name) or {}).items())
        if ok:
            out.add(rec["n"])
    return out
