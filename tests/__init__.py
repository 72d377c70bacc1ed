"""semmem's tests, by layer: unit, store, core, web, system; shared helpers in ``support``."""
