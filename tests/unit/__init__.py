"""Pure modules, no store and no server: packing, lexical, ranking, model files, evaluation data."""
