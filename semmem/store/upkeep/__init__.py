"""The engine's upkeep: compaction, cleanup and index upkeep (``compaction``), a table's
invariants and their repair (``check``), unfinished uploads (``uploads``) and the engine's
private temp folder (``scratch``)."""
