"""The read path: snapshots kept current (``snapshots``, ``evolve``, ``persistent``), rows
decoded (``reading``), an indexed partition read by recency, number or filter (``recency``,
``keyed``, ``filtered``) and the read views cache (``cache``)."""
