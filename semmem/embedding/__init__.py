"""The model: the ``Embedder`` interface and its query cache (``embedder``), the serving encoder
on ONNX Runtime (``onnx``) and its set-up (``export``), the torch reference (``reference``),
the choice between them (``choice``), the pinned model files (``files``), the one model thread
(``queue``) and a deterministic fake for tests (``fakes``).

The only package that imports ``onnxruntime``, ``torch`` or ``sentence_transformers``.
"""
