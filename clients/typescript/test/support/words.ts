/** An embedder both sides can compute: lower-case words hashed (FNV-1a) into 32 buckets, then
 * normalised. The server runs it through `serve`'s own code path (`WORDS_LAUNCH`); the tests
 * give the same function to LangGraph.js's InMemoryStore, so scores can be compared. */

export const DIMS = 32;

export const WORDS_LAUNCH = `
import re
import numpy as np
from semmem.embedding.embedder import normalise
from semmem.settings import Settings
from semmem.web.server import serve

class WordEmbedder:
    model_id = "ts-words-32"
    dim = ${DIMS}

    def embed_batch(self, texts):
        out = np.zeros((len(texts), ${DIMS}), dtype=np.float32)
        for row, text in enumerate(texts):
            for word in re.findall(r"[a-z0-9]+", text.lower()):
                h = 2166136261
                for b in word.encode():
                    h = ((h ^ b) * 16777619) & 0xFFFFFFFF
                out[row, h % ${DIMS}] += 1.0
            if not out[row].any():
                out[row, 0] = 1.0
        return normalise(out)

serve(Settings(), embedder=WordEmbedder())
`;

export function wordVector(text: string): number[] {
  const out: number[] = Array.from({ length: DIMS }, () => 0);
  for (const word of text.toLowerCase().match(/[a-z0-9]+/g) ?? []) {
    let h = 2166136261;
    for (const b of Buffer.from(word, "utf-8")) h = Math.imul(h ^ b, 16777619) >>> 0;
    out[h % DIMS] = out[h % DIMS]! + 1;
  }
  if (!out.some((v) => v !== 0)) out[0] = 1;
  const norm = Math.sqrt(out.reduce((a, v) => a + v * v, 0));
  return out.map((v) => v / norm);
}

export const wordEmbeddings = {
  embedDocuments: async (texts: string[]): Promise<number[][]> => texts.map(wordVector),
  embedQuery: async (text: string): Promise<number[]> => wordVector(text),
};
