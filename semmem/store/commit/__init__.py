"""The commit path: group commit and the compare-and-swap loop (``writes``), the commit itself
(``tail``), the write fence (``fence``), lost races (``conflicts``) and quotas (``quota``)."""
