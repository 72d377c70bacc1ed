"""Pieces of conversations in ranking: who said each piece, in which session, and when.

An ingested message is stored as numbered pieces whose record says where each came from
(``Item.piece``: ``{"session", "role", "at", "message", "part"}``,
``semmem.conversations.pieces``). Ranking reads those once per
item set (``Turns``, carried forward as the set changes) and adds to a piece's score what the
fields say about it (``piece_terms``); facts have no such fields and are scored as before.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from semmem.items import Item, parse_iso
from semmem.store.views import ItemSet

ASSISTANT = "assistant"


def piece_fields(item: Item) -> tuple[str, str, int, int] | None:
    """A piece's session, role, time (epoch ms) and message number; ``None`` for a fact."""
    piece = item.piece
    if piece is None:
        return None
    at = piece.get("at")
    try:
        when = parse_iso(at) if isinstance(at, str) else item.ts
    except ValueError:
        when = item.ts
    message = piece.get("message")
    return (str(piece.get("session", "")), str(piece.get("role", "")), when,
            message if isinstance(message, int) else -1)


@dataclass(frozen=True)
class Turns:
    """Per row of a set: whether it is a piece, said by the assistant, its session (a code,
    -1 for facts), its message (a code) and its time."""

    piece: npt.NDArray[np.bool_]
    assistant: npt.NDArray[np.bool_]
    session: npt.NDArray[np.int64]
    message: npt.NDArray[np.int64]
    at: npt.NDArray[np.float64]
    sessions: dict[str, int]
    messages: dict[tuple[str, int], int]

    @property
    def any(self) -> bool:
        """Whether the set holds pieces at all (else nothing here applies)."""
        return bool(self.sessions)

    @classmethod
    def of(cls, s: ItemSet) -> Turns:
        """Read every item's piece fields."""
        empty = cls(np.zeros(0, bool), np.zeros(0, bool), np.zeros(0, np.int64),
                    np.zeros(0, np.int64), np.zeros(0, np.float64), {}, {})
        return empty.with_rows(list(s.items))

    def with_rows(self, items: list[Item]) -> Turns:
        """These rows followed by ``items``' rows (session and message codes shared)."""
        sessions, messages = dict(self.sessions), dict(self.messages)
        n = len(items)
        piece, assistant = np.zeros(n, bool), np.zeros(n, bool)
        session, message = np.full(n, -1, np.int64), np.full(n, -1, np.int64)
        at = np.zeros(n, np.float64)
        for i, item in enumerate(items):
            fields = piece_fields(item)
            at[i] = item.ts
            if fields is None:
                continue
            sid, role, when, m = fields
            piece[i], assistant[i], at[i] = True, role == ASSISTANT, when
            session[i] = sessions.setdefault(sid, len(sessions))
            message[i] = messages.setdefault((sid, m), len(messages))
        return Turns(np.concatenate([self.piece, piece]),
                     np.concatenate([self.assistant, assistant]),
                     np.concatenate([self.session, session]),
                     np.concatenate([self.message, message]),
                     np.concatenate([self.at, at]), sessions, messages)

    def evolve(self, old: ItemSet, new: ItemSet, appended: range, changed: list[int],
               removed: list[int]) -> Turns:
        """These rows for ``new``: ``removed`` (old rows) cut, ``changed`` and ``appended``
        (new rows) read again."""
        kept = self
        if removed:
            keep = np.ones(len(self.piece), bool)
            keep[removed] = False
            kept = Turns(self.piece[keep], self.assistant[keep], self.session[keep],
                         self.message[keep], self.at[keep], self.sessions, self.messages)
        if changed:
            fresh = Turns(np.zeros(0, bool), np.zeros(0, bool), np.zeros(0, np.int64),
                          np.zeros(0, np.int64), np.zeros(0, np.float64), kept.sessions,
                          kept.messages).with_rows([new.items[i] for i in changed])
            rows = np.array(changed, np.int64)
            out = Turns(kept.piece.copy(), kept.assistant.copy(), kept.session.copy(),
                        kept.message.copy(), kept.at.copy(), fresh.sessions, fresh.messages)
            for mine, theirs in ((out.piece, fresh.piece), (out.assistant, fresh.assistant),
                                 (out.session, fresh.session), (out.message, fresh.message),
                                 (out.at, fresh.at)):
                mine[rows] = theirs
            kept = out
        return kept.with_rows([new.items[i] for i in appended])


def grouped_evidence(codes: npt.NDArray[np.int64], evidence: npt.NDArray[np.float32]
                     ) -> npt.NDArray[np.float32]:
    """Each row's group total of ``evidence`` (rows with code -1 get 0), divided by the best
    group's total (0 when nothing has evidence)."""
    inside = codes >= 0
    if not inside.any():
        return np.zeros(len(codes), np.float32)
    totals = np.bincount(codes[inside], weights=evidence[inside])
    top = float(totals.max())
    out = np.zeros(len(codes), np.float32)
    if top > 0:
        out[inside] = totals[codes[inside]] / top
    return out


def message_gap(codes: npt.NDArray[np.int64], scores: npt.NDArray[np.float32]
                ) -> npt.NDArray[np.float32]:
    """Each row's distance below the best score of its group (0 for rows with code -1)."""
    inside = codes >= 0
    out = np.zeros(len(codes), np.float32)
    if not inside.any():
        return out
    best = np.full(int(codes.max()) + 1, -np.inf, np.float32)
    np.maximum.at(best, codes[inside], scores[inside])
    out[inside] = best[codes[inside]] - scores[inside]
    return out


def spread_sessions(order: list[int], scores: npt.NDArray[np.float32], turns: Turns,
                    weight: float, lines: int) -> list[int]:
    """``order`` (rows, best first) with its first ``lines`` picked again, one at a time: each
    pick is the row scoring best after losing ``weight`` per message already picked from its
    session (a further piece of a picked message, and a fact, lose nothing); the rest follow
    in their order.

    For a question about several things, whose turns are usually in different sessions: one
    long session on the topic would otherwise fill a small budget with its own messages.
    """
    rest = list(order)
    picked: list[int] = []
    per_session: dict[int, int] = {}
    messages: set[int] = set()
    for _ in range(min(lines, len(rest))):
        best, best_score = 0, -np.inf
        for pos, row in enumerate(rest):
            score = float(scores[row])
            if score <= best_score:  # best first, and nothing gains: no later row can win
                break
            session, message = int(turns.session[row]), int(turns.message[row])
            if session >= 0 and message not in messages:
                score -= weight * per_session.get(session, 0)
            if score > best_score:
                best, best_score = pos, score
        row = rest.pop(best)
        picked.append(row)
        session, message = int(turns.session[row]), int(turns.message[row])
        if session >= 0 and message not in messages:
            messages.add(message)
            per_session[session] = per_session.get(session, 0) + 1
    return picked + rest
