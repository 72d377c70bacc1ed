"""semmem's benchmarks: one runner (``python -m benchmarks``, ``benchmarks/__main__.py``), the
named cases (``benchmarks/cases``), the set-up they share (``benchmarks/harness.py``), the one
results format (``benchmarks/results.py``) and the renderer of docs/benchmarks.md's tables
(``benchmarks/render.py``). docs/benchmarks.md says how to run them."""
