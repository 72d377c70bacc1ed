"""The e5 model's own C engine (``e5.c`` from the pinned wheel), compiled with ``cc`` on
demand: the yardstick the ONNX encoder's vectors and tokens are checked against, as
sentence-transformers is MiniLM's. Set-up and benchmark time only; serving never compiles it.

Built single-threaded (no OpenMP) with AVX2 where the CPU has it, as one shared library with a
small shim that exposes the engine's tokenizer (``tok_content``, static in ``e5.c``).
"""

from __future__ import annotations

import ctypes
import shutil
import subprocess
import tempfile
from pathlib import Path

import numpy as np

from semmem.embedding.embedder import normalise
from semmem.errors import ModelError
from semmem.items import Vectors

SOURCE = "e5.c"
_SHIM = """
#include "e5.c"
int e5_tokens(e5_model *m, const char *text, int is_query, int *out, int cap) {
    const char *pfx = is_query ? "query: " : "passage: ";
    size_t plen = strlen(pfx), tl = strlen(text);
    char *buf = (char *)malloc(plen + tl + 1);
    memcpy(buf, pfx, plen); memcpy(buf + plen, text, tl + 1);
    int n = tok_content(&m->tok, buf, out, cap);
    free(buf);
    return n;
}
"""


def _flags() -> list[str]:
    """AVX2 + FMA when this CPU has them (the engine's fast path), else its portable C."""
    try:
        cpu = Path("/proc/cpuinfo").read_text()
    except OSError:
        cpu = ""
    return ["-mavx2", "-mfma"] if " avx2" in cpu and " fma" in cpu else []


class CEngine:
    """``e5.c`` compiled into a temporary library and loaded through ``ctypes``."""

    encoder = "e5.c"

    def __init__(self, folder: Path, weights: str) -> None:
        compiler = shutil.which("cc") or shutil.which("gcc")
        if compiler is None:
            raise ModelError("the e5 reference engine needs a C compiler (cc)")
        self._tmp = tempfile.TemporaryDirectory()
        tmp = Path(self._tmp.name)
        shutil.copy(folder / SOURCE, tmp / SOURCE)
        shutil.copy(folder / "e5.h", tmp / "e5.h")
        (tmp / "shim.c").write_text(_SHIM)
        self.flags = ["-O2", *_flags(), "-shared", "-fPIC"]
        subprocess.run([compiler, *self.flags, "-o", str(tmp / "libe5.so"), str(tmp / "shim.c"),
                        "-lm"], check=True, capture_output=True)
        lib = ctypes.CDLL(str(tmp / "libe5.so"))
        lib.e5_load.restype = ctypes.c_void_p
        lib.e5_load.argtypes = [ctypes.c_char_p]
        lib.e5_free.argtypes = [ctypes.c_void_p]
        lib.e5_dim.argtypes = [ctypes.c_void_p]
        lib.e5_embed.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_int,
                                 ctypes.POINTER(ctypes.c_float)]
        lib.e5_tokens.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_int,
                                  ctypes.POINTER(ctypes.c_int), ctypes.c_int]
        self._lib = lib
        self._model = lib.e5_load(str(folder / weights).encode())
        if not self._model:
            raise ModelError(f"e5.c could not load {folder / weights}")
        self.dim = int(lib.e5_dim(self._model))

    def embed(self, texts: list[str], query: bool) -> Vectors:
        """Each text embedded on its own, with the ``query: `` or ``passage: `` prefix."""
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        row = (ctypes.c_float * self.dim)()
        for i, text in enumerate(texts):
            if self._lib.e5_embed(self._model, text.encode(), int(query), row):
                raise ModelError(f"e5.c failed on text {i}")
            out[i] = np.ctypeslib.as_array(row)
        return normalise(out)

    def tokens(self, text: str, query: bool) -> list[int]:
        """The engine's content token ids for the prefixed text (no ``<s>``/``</s>``)."""
        cap = len(text.encode()) + 16
        buf = (ctypes.c_int * cap)()
        n = self._lib.e5_tokens(self._model, text.encode(), int(query), buf, cap)
        return list(buf[:n])

    def close(self) -> None:
        """Free the model and remove the library."""
        if self._model:
            self._lib.e5_free(self._model)
            self._model = None
        self._tmp.cleanup()
