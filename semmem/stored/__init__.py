"""The application's store items (LangGraph's ``BaseStore`` on the server): a JSON value under
a namespace and a key, its index texts embedded in pieces, its expiry, in one write.

- ``namespaces``: a namespace's partition, and the listing of namespaces that hold items (the
  store's listing records: system records, ``semmem.store.system``).
- ``ports``: what this package needs of the memory core (``Core``; and ``Holdings``, the
  upgrade's; ``Memory`` is both).
- ``items``: ``StoreItems(core)``: ``get``/``put``/``delete``/``search``/``refresh`` over
  ``semmem.keyed`` (space ``store``); pieces never surfaced to the model's tools.
- ``filters``: LangGraph's filter semantics (containment, ``$eq $ne $gt $gte $lt $lte``).
- ``requests`` / ``batch``: a ``POST /store`` body checked whole, then run in order
  (``semmem.web.stored`` serves it).
- ``upgrade``: the format gate's steps (``semmem.lifecycle.upgrading``): from format 1, the items an
  earlier release kept as facts made store items again; from format 2, the namespaces an
  earlier release listed in the partition ``%store-namespaces`` listed by listing records,
  that partition deleted.
"""
