"""The model: the ``Embedder`` interface and its query cache (``embedder``), the serving encoder
on ONNX Runtime (``onnx``) and its set-up (``export``: the graph from the weights in ``graph``,
checked against the reference vectors of ``probes``), the torch reference (``reference``), the
choice between them (``choice``), the pinned model files (``files``), the one model thread
shared fairly between callers (``queue``) and what it tells the call it runs (``calls``: its
stop switch, bulk or not), and a deterministic fake for tests (``fakes``); the multilingual model
(multilingual-e5-small, 4-bit) on ONNX Runtime (``e5``) with its weights file (``e5file``),
its tokenizer (``unigram``) and its own C engine as the reference (``engine``).

The only package that imports ``onnxruntime``, ``onnx``, ``torch`` or ``sentence_transformers``
(torch only in ``reference``).
"""
