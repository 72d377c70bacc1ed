/** The same seeded sequence of store operations against LangGraph.js's InMemoryStore and
 * SemmemStore over a real server, result by result. Where they may differ by design (listed
 * in the package README, "Divergences from InMemoryStore"), the comparison says so: search
 * order without a query, namespaces emptied by deletes, ties in a paged ranking. */

import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import { InMemoryStore, type BaseStore, type Item, type Operation, type SearchItem } from "@langchain/langgraph-checkpoint";
import type { Embeddings } from "@langchain/core/embeddings";
import { SemmemClient } from "../src/index.js";
import { SemmemStore } from "../src/langgraph.js";
import { PATH, Server, TOKEN } from "./support/server.js";
import { DIMS, WORDS_LAUNCH, wordEmbeddings } from "./support/words.js";

const SEED = Number(process.env["SEMMEM_DIFF_SEED"] ?? 20261206);
const STEPS = Number(process.env["SEMMEM_DIFF_STEPS"] ?? 400);

let server: Server;
before(async () => { server = await Server.start({ launch: WORDS_LAUNCH }); });
after(async () => { await server?.stop(); });

function mulberry32(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const WORDS = ["tea", "coffee", "green", "black", "cello", "piano", "lyon", "paris", "bees", "fries"];
const NAMESPACES = [["users", "alice"], ["users", "bob"], ["users", "alice", "notes"], ["docs"], ["docs", "guides"], ["team", "blue", "notes"]];
const KEYS = ["k1", "k2", "k3", "k4", "profile"];
const PREFIXES = [[], ["users"], ["users", "alice"], ["docs"], ["team"], ["nobody"]];

class Sequence {
  constructor(private readonly rand: () => number) {}
  pick<T>(xs: readonly T[]): T { return xs[Math.floor(this.rand() * xs.length)]!; }
  int(lo: number, hi: number): number { return lo + Math.floor(this.rand() * (hi - lo + 1)); }
  chance(p: number): boolean { return this.rand() < p; }

  op(): Operation {
    const r = this.rand();
    if (r < 0.4) {
      const text = Array.from({ length: this.int(1, 4) }, () => this.pick(WORDS)).join(" ");
      return { namespace: [...this.pick(NAMESPACES)], key: this.pick(KEYS),
        value: { text, n: this.int(0, 9), tag: this.pick(["a", "b", "c"]) } };
    }
    if (r < 0.5) return { namespace: [...this.pick(NAMESPACES)], key: this.pick(KEYS), value: null };
    if (r < 0.65) return { namespace: [...this.pick(NAMESPACES)], key: this.pick(KEYS) };
    if (r < 0.9) {
      const filter = this.pick([undefined, undefined, { tag: "a" }, { n: { $gt: 4 } }, { n: { $lte: 5 }, tag: { $ne: "b" } }, { tag: { $eq: "c" } }]);
      const paged = this.chance(0.3);
      return { namespacePrefix: [...this.pick(PREFIXES)], ...(filter ? { filter } : {}),
        ...(this.chance(0.5) ? { query: `${this.pick(WORDS)} ${this.pick(WORDS)}` } : {}),
        limit: paged ? this.int(1, 3) : 50, offset: paged ? this.int(0, 3) : 0 };
    }
    const conditions = [];
    if (this.chance(0.5)) conditions.push({ matchType: "prefix" as const, path: this.pick([["users"], ["users", "*"], ["docs"], ["*", "alice"]]) });
    if (this.chance(0.3)) conditions.push({ matchType: "suffix" as const, path: this.pick([["notes"], ["alice"], ["*"]]) });
    return { matchConditions: conditions, ...(this.chance(0.4) ? { maxDepth: this.int(1, 3) } : {}), limit: 100, offset: 0 };
  }
}

const key = (i: Item): string => JSON.stringify([i.namespace, i.key]);
const view = (i: Item): unknown => ({ namespace: i.namespace, key: i.key, value: i.value, updated: i.updatedAt > i.createdAt });

/** A copy of InMemoryStore's state: the batch's reads run on it, so they answer the state before
 * the batch — InMemoryStore hands out its own item objects and a later put of the batch mutates
 * them in place (the README's divergence 2), which a comparison must not read. */
function snapshot(memory: InMemoryStore, make: () => InMemoryStore): InMemoryStore {
  const copy = make();
  const [from, to] = [memory as unknown as Record<string, unknown>, copy as unknown as Record<string, unknown>];
  to["data"] = structuredClone(from["data"]);
  to["vectors"] = structuredClone(from["vectors"]);
  return copy;
}

/** The namespaces InMemoryStore holds items in (it keeps listing namespaces whose items were all
 * deleted: the README's divergence 3). */
function liveNamespaces(memory: InMemoryStore): Set<string> {
  const data = (memory as unknown as { data: Map<string, Map<string, unknown>> }).data;
  return new Set([...data].filter(([, items]) => items.size > 0).map(([ns]) => ns));
}

test(`${STEPS} seeded operations: InMemoryStore and SemmemStore agree`, async () => {
  const make = (): InMemoryStore => new InMemoryStore({ index: { dims: DIMS, embeddings: wordEmbeddings as unknown as Embeddings, fields: ["text"] } });
  const memory = make();
  const semmem = new SemmemStore(new SemmemClient({ url: server.url, token: TOKEN, memoryPath: PATH }), { index: { fields: ["text"] } });
  const seq = new Sequence(mulberry32(SEED));
  const counts = { get: 0, search: 0, scored: 0, list: 0, put: 0, batches: 0 };
  let done = 0;
  while (done < STEPS) {
    const size = seq.chance(0.25) ? seq.int(2, 5) : 1;
    const ops = Array.from({ length: size }, () => seq.op());
    done += size;
    counts.batches += 1;
    const live = liveNamespaces(memory);  // before the batch: its reads see that state
    const reads = ops.map((op, i) => ["value" in op ? -1 : i, op] as const).filter(([i]) => i >= 0);
    const before = await snapshot(memory, make).batch(reads.map(([, op]) => op));
    const want: unknown[] = ops.map(() => undefined);
    reads.forEach(([i], j) => { want[i] = before[j]; });
    await memory.batch(ops);
    const got = await (semmem as BaseStore).batch(ops);
    ops.forEach((op, i) => {
      const where = `step ${done}, op ${i} of ${JSON.stringify(ops)}`;
      const [w, g] = [want[i] as unknown, got[i] as unknown];
      if ("value" in op) { counts.put += 1; assert.equal(g, null, where); return; }
      if ("namespacePrefix" in op) {
        counts.search += 1;
        const [ws, gs] = [w as SearchItem[], g as SearchItem[]];
        assert.equal(gs.length, ws.length, where);
        if ((op.offset ?? 0) === 0 && ws.length < (op.limit ?? 10)) {
          // Every match: the same items, values and scores (order: divergence 1 without a query).
          const byKey = new Map(ws.map((x) => [key(x), x]));
          for (const x of gs) {
            const y = byKey.get(key(x));
            assert.ok(y, `${where}: ${key(x)} only in SemmemStore`);
            assert.deepEqual(view(x), view(y), where);
            if (op.query) {
              counts.scored += 1;
              assert.ok(Math.abs(x.score! - y.score!) < 1e-4, `${where}: scores ${x.score} ${y.score}`);
            } else {
              assert.equal(x.score, undefined, where);
            }
          }
          if (op.query) {  // best first on both sides
            for (let j = 1; j < gs.length; j += 1) assert.ok(gs[j - 1]!.score! >= gs[j]!.score! - 1e-6, where);
          }
        }
        return;
      }
      if ("matchConditions" in op) {
        counts.list += 1;
        const expected = (w as string[][]).filter((ns) => [...live].some((l) => l === ns.join(":") || l.startsWith(ns.join(":") + ":")));
        assert.deepEqual(g, expected, where);
        return;
      }
      counts.get += 1;
      assert.deepEqual(g === null ? null : view(g as Item), w === null ? null : view(w as Item), where);
    });
  }
  console.log(`differential: ${JSON.stringify(counts)}`);
  assert.ok(counts.get > 20 && counts.search > 50 && counts.scored > 20 && counts.list > 20 && counts.batches > 50);
});
