"""Which earlier release wrote a store that records no format, told by what that release
wrote (``semmem/store/formats.py``): a store is not the oldest just because it records none.

Releases up to ``62c1cbc`` record no format. Up to ``e601069`` the Python client's
``SemmemStore`` kept a LangGraph item as a fact (through ``remember``, the model's own door:
no row field tells it from a model's fact, and that release's ``SemmemStore`` read back every
fact of that JSON form as an item). From ``4cbac00`` the application's items go through
``POST /store`` as keyed items of space ``store``, each namespace listed in the partition
``FORMER_LISTING`` (space ``store-ns``): rows no release before wrote. A store holding either
is in format 2 — its application's items keyed already, and a fact whose text parses as an
item's JSON the model's, as that release read it — so the step from format 1
(``items_from_facts``) does not run on it. A store holding neither is read as format 1.

The remaining ambiguity: a store of ``4cbac00``…``62c1cbc`` whose application never put a
store item holds no mark of its release; a fact of it whose text is exactly the old adapter's
canonical JSON (sorted keys, no spaces, ``{"key": …, "value": {…}}``) is read as that
adapter's item, as ``e601069``'s own ``SemmemStore`` read it.
"""

from __future__ import annotations

from semmem.items.address import address_of
from semmem.stored.ports import Holdings
from semmem.stored.upgrade import FORMER_LISTING

KEYED_STORE = 2  # the format of a store whose application's items are keyed (``formats``)
FACTS_STORE = 1  # the format of a store whose application's items may be facts
MARKS = frozenset({"store", "store-ns"})  # keyed spaces only releases of ``POST /store`` wrote


async def written_format(core: Holdings) -> int:
    """The format of a store that records none, from what its releases wrote: 2 when it holds
    a keyed store piece or the namespace listing partition, else 1."""
    partitions = await core.partitions()
    if FORMER_LISTING in partitions:
        return KEYED_STORE
    for partition in partitions:
        for item in await core.every_item(partition):
            address = address_of(item)
            if address is not None and address.space in MARKS:
                return KEYED_STORE
    return FACTS_STORE
