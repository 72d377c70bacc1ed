"""Keyed items: items a caller addresses by a key of its own within a partition, their bodies
stored as numbered pieces (conversation sessions; LangGraph store items build on it).

The model
- An ``Address(space, key)`` names a keyed item in its partition: ``space`` says what kind of
  item it is (``"session"`` for conversations), ``key`` is the caller's string (compared
  exactly; 1-1,024 characters, no control characters).
- A keyed item *is* its pieces: ordinary numbered items (recall, search, ``forget`` by number,
  retention, export/import, backups and ``semmem check`` treat them like any fact) whose
  ``keyed`` record field holds the address (``{"space", "key"}``). Each piece row's ``tags``
  carry a hash of the address and one of its space (``semmem.items.address.row_tags``,
  derived where rows are built), so no caller string reaches a filter expression.
- Lookups go through an index at any partition size: below the index threshold a per-snapshot
  dictionary (``index.Addresses``, carried forward by each commit, never rebuilt), above it the
  ``LABEL_LIST`` index on ``tags``.
- An address is set when a piece is created and never changed by an edit (``update`` keeps a
  piece's record fields), so a write that looked an item up needs to see only the numbers
  assigned since to know every piece of it.

The API (``Keyed(core)``, ``semmem.keyed.items``; ``core``: what ``semmem.keyed.ports.Partitions``
asks of the memory core, which ``Memory`` answers)
- ``await held(partition, address) -> Held``: the numbers of its live pieces and the high-water
  mark when looked up; ``await items(held)``: those pieces as ``Item``\\ s.
- ``await pieces(partition, address) -> list[Item]``: the live pieces (none expired), number
  order — the item's body in order; ``[]`` when there is no such item.
- ``await keys(partition, space) -> {Address: [Item, …]}``: every item of a space (owners).
- ``await write(partition, address, decide, op=None, dropped=False)``: one atomic write of the
  item: ``decide(view, pieces) -> Mutation | dict`` runs on the latest write view with the
  item's pieces in it (those looked up plus any numbered since), is called again after a lost
  race, and its ``Mutation`` commits with ``op``'s idempotency record (``rules.mutation``). A
  put that replaces a body returns rows for the new pieces and tombstones for the old ones
  (``dropped=True`` so the old texts are purged). ``commit(partition, held, decide, op)`` is
  the same step for a caller that looked up first (to embed only what is new).
- ``await put(partition, address, [(text, vector, attrs), …], op=None, ts=None)``: the item's
  body replaced in one write (new pieces numbered in order, the old ones forgotten and
  purged) → ``{"status", "items": [n…], "replaced": [n…], "count"}``; record fields other than
  ``keyed`` are the caller's (e.g. a hiding flag or the value of a store item).
- ``await forget(partition, address, keep=…) -> [n, …]``: every live piece forgotten through
  the forget path (durably gone within the forget window), pieces added meanwhile included.
- ``semmem.items.address.address_of(item)``: the address a piece belongs to, or ``None`` for
  a fact.

Visibility: conversation pieces are the model's to see (recall, search, ``forget`` by number).
Items the model's tools must neither see nor overwrite (LangGraph store items) need a record
field the reads and the tools' writes honour; that is not built here (issue 48).
"""

from semmem.items.address import KEYED, Address, address_of
from semmem.keyed.items import Held, Keyed, Moved

__all__ = ["KEYED", "Address", "Held", "Keyed", "Moved", "address_of"]
