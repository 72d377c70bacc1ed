"""The memory core: ``Memory``'s behaviour, records, recall with the real model, evaluation runs."""
