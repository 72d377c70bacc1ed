"""The item an edit targets, and what a refused target tells the caller.

The model learns nothing from the numbers it may not use: a number never given, a number of
another audience (a piece of the application's store item, ``semmem.audience``), a number
outside a binding's scope and a number forgotten all answer one ``NotFound`` (404, one
wording, ``{"n": n}``). The cursor rule is the one exception, where it means something: an
edit whose target existed at the cursor's state and changed or vanished since is a
``Conflict`` (recall again). A tombstone of an item the model could not see records no
creation before its own forget (``tombstone``), so the rule never reads one as "existed at
your cursor".
"""

from __future__ import annotations

from collections.abc import Callable

from semmem.audience import Caller, may_see
from semmem.errors import Conflict, Forbidden, InvalidArguments, NotFound
from semmem.items import Item
from semmem.store.rows import NEW, ItemRow
from semmem.store.views import WriteView


def not_found(n: int) -> NotFound:
    """The one refusal of a number the caller may not edit: never given, another audience's,
    outside its scope, forgotten or expired read the same."""
    return NotFound(f"item {n} does not exist in this memory", {"n": n})


def check_target(view: WriteView, n: int, cursor_seq: int | None,
                 within: Callable[[Item], bool] | None = None,
                 caller: Caller = Caller.OWNER) -> Item:
    """The live item ``n`` an edit targets.

    The cursor rule: an edit conflicts only when its target existed at the cursor's state and
    changed (or was forgotten) since. An item created after the cursor can be edited under it:
    the model learned its number from a write's own result or from search. An item whose
    creation is not recorded (written before it was, and changed since) counts as existing.

    Raises:
        InvalidArguments: ``n`` is not an integer ≥ 1.
        Conflict: the item existed at the cursor's state and changed after it.
        NotFound: no live item ``n`` ``caller`` may see (``not_found``).
    """
    if isinstance(n, bool) or not isinstance(n, int) or n < 1:
        raise InvalidArguments("n must be an integer ≥ 1")
    item = view.get(n)
    if item is not None and not may_see(caller, item):
        # An item the caller may not see (the application's, to the model) is a number that
        # does not exist, before any cursor rule: nothing tells it from one never given.
        raise not_found(n)
    if within is not None and (item is None or not within(item)):
        # Another scope's fact, or a forgotten one (a tombstone keeps no metadata saying whose
        # it was): a number never given, and no conflict, so nothing tells them apart.
        raise not_found(n)
    tomb = view.tombstones.get(n)
    changed, born = (item.seq, item.born) if item else (tomb.seq, tomb.created) if tomb \
        else (None, None)
    if cursor_seq is not None and changed is not None and changed > cursor_seq \
            and (born is None or born <= cursor_seq):
        raise Conflict(f"item {n} changed after your recall; recall again and retry", {"n": n})
    if item is None:
        raise not_found(n)  # forgotten or never given: the same answer
    return item


def check_editable(item: Item, owner: bool) -> None:
    """Model tools may not edit owner-curated records: hidden items (inactive, held, merged)
    and records imported from a map of records (they carry a ``slug``). Like the adapter's
    list edits on a structured store, a stray edit must not clobber them; owners (CLI, admin
    API, console, Python API) may.

    Raises:
        Forbidden: ``owner`` is false and the item is curated.
    """
    if not owner and (not item.surfaced or "slug" in item.attrs):
        raise Forbidden(f"item {item.n} is an owner-curated record (hidden, or imported from a "
                        "map of records); only the memory's owner can change it", {"n": item.n})


def tombstone(item: Item, updated: int) -> ItemRow:
    """The row replacing a forgotten ``item``: its number, never reused. A tombstone of an item
    the model may not see records its creation as its own forget (``NEW``): to the cursor rule
    the number came into being after any cursor that could have seen it, so a model's edit of
    it is the same 404 as a number never given, never a 409 telling that something was there."""
    born = item.born if may_see(Caller.MODEL, item) else NEW
    return ItemRow(item.n, None, None, item.ts, updated, item.revision + 1, forgotten=True,
                   created=born)
