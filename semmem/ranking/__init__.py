"""Ranking: which items of a set matter for a query, and which of them fit the budget.

``ranker`` scores and orders (semantic and lexical evidence, the relevance floor, near-duplicates);
``lexical`` is the BM25 index and its tokens; ``cues`` reads a query's wording (asking when);
``sets`` holds what ranking keeps per item set; ``packing`` fits whole lines into ``maxBytes``;
``calibration`` carries the cosine thresholds over to each model's scale.
Plain Python and numpy.
"""
