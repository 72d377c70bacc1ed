"""The engine's upkeep: compaction and cleanup (``compaction``), index upkeep (``indexes``),
unreferenced files (``orphans``), a table's invariants and their repair (``check``), unfinished
uploads (``uploads``) and the engine's private temp folder (``scratch``)."""
