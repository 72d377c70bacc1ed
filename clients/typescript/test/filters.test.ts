/** Filters and values against LangGraph.js's InMemoryStore (issue 62, item 11): an `undefined`
 * operand is refused (JSON would drop the condition), ±Infinity travels as the server's
 * `{"$float": …}` and compares as InMemoryStore compares it, `maxDepth: 0` lists `[""]`, a
 * 189 KiB value indexed whole is stored; and the differences the README lists stay true
 * (values' keys come back sorted; `null` and `true == 1` follow Python's rules). */

import assert from "node:assert/strict";
import { test } from "node:test";
import { InMemoryStore } from "@langchain/langgraph-checkpoint";
import { SemmemStore, wireFilter } from "../src/langgraph.js";
import { partition, servedClient } from "./support/server.js";

const served = servedClient();

function keys(items: { key: string }[]): string[] {
  return items.map((i) => i.key).sort();
}

test("a filter operand left undefined is refused by name, not dropped (which matched every item)", async () => {
  const ns = ["users", partition()];
  const store = new SemmemStore(served.client);
  await store.put(ns, "a", { owner: "ann" });
  await store.put(ns, "b", { other: 1 });
  await assert.rejects(store.search(ns, { filter: { owner: undefined } }),
    (e: unknown) => e instanceof TypeError && /filter "owner" is undefined/.test(e.message));
  await assert.rejects(store.search(ns, { filter: { owner: { $ne: undefined } } }), /filter "owner"\.\$ne is undefined/);
  // What it asked for, said the way the server reads it: null matches the item without the field.
  assert.deepEqual(keys(await store.search(ns, { filter: { owner: null } })), ["b"]);
});

test("±Infinity is sent as {\"$float\": …} and compares as in InMemoryStore", async () => {
  assert.deepEqual(wireFilter({ s: { $lt: Infinity, $gt: -Infinity }, t: NaN }),
    { s: { $lt: { $float: "inf" }, $gt: { $float: "-inf" } }, t: { $float: "nan" } });
  const ns = ["scores", partition()];
  const stores = [new InMemoryStore(), new SemmemStore(served.client)];
  for (const store of stores) {
    await store.put(ns, "low", { score: -3 });
    await store.put(ns, "high", { score: 5 });
  }
  const filters = [{ score: { $lt: Infinity } }, { score: { $gt: -Infinity } }, { score: { $lt: -Infinity } },
    { score: { $gte: 0, $lt: Infinity } }, { score: { $ne: Infinity } }, { score: Infinity }];
  for (const filter of filters) {
    const [memory, semmem] = await Promise.all(stores.map((s) => s.search(ns, { filter })));
    assert.deepEqual(keys(semmem!), keys(memory!), JSON.stringify(wireFilter(filter)));
  }
  assert.deepEqual(keys(await stores[1]!.search(ns, { filter: { score: { $lt: Infinity } } })), ["high", "low"]);
});

test("listNamespaces with maxDepth 0 answers [[\"\"]] as InMemoryStore does", async () => {
  const ns = ["depth", partition()];
  const stores = [new InMemoryStore(), new SemmemStore(served.client)];
  for (const store of stores) await store.put(ns, "k", { v: 1 });
  const [memory, semmem] = await Promise.all(stores.map((s) => s.listNamespaces({ prefix: ns, maxDepth: 0 })));
  assert.deepEqual(memory, [[""]]);
  assert.deepEqual(semmem, memory);
});

test("a 189 KiB value indexed whole (the default \"$\") is stored and read back", async () => {
  const ns = ["big", partition()];
  const value = { rows: Array.from({ length: 1800 }, (_, i) => ({ id: i, note: `row ${i} `.repeat(9), tags: ["a", "b"] })) };
  const compact = Buffer.byteLength(JSON.stringify(value));
  assert.ok(compact > 185 * 1024 && compact < 256 * 1024, `${compact} bytes`);
  assert.ok(JSON.stringify(value, null, 2).length > 256 * 1024, "its indexed text is over the server's index limit");
  const store = new SemmemStore(served.client);
  await store.put(ns, "doc", value);
  assert.deepEqual((await store.get(ns, "doc"))?.value, value);
  assert.equal((await store.search(ns, { query: "row 17" }))[0]?.key, "doc");
});

test("the README's listed differences hold: keys come back sorted; null and true == 1 follow Python's rules", async () => {
  const ns = ["diff", partition()];
  const stores = [new InMemoryStore(), new SemmemStore(served.client)] as const;
  for (const store of stores) {
    await store.put(ns, "v", { zeta: 1, alpha: { y: 2, b: 3 }, flag: true, none: null });
    await store.put(ns, "w", { flag: 1 });
  }
  const [memory, semmem] = await Promise.all(stores.map((s) => s.get(ns, "v")));
  assert.deepEqual(Object.keys(memory!.value), ["zeta", "alpha", "flag", "none"]);
  assert.deepEqual(Object.keys(semmem!.value), ["alpha", "flag", "none", "zeta"]);
  assert.deepEqual(semmem!.value, memory!.value);  // equal but for the order
  const differ = async (filter: Record<string, unknown>): Promise<[string[], string[]]> =>
    [keys(await stores[0].search(ns, { filter })), keys(await stores[1].search(ns, { filter }))];
  assert.deepEqual(await differ({ flag: true }), [["v"], ["v", "w"]]);   // Python: True == 1
  assert.deepEqual(await differ({ none: null }), [["v"], ["v", "w"]]);   // Python: null matches a missing field
});
