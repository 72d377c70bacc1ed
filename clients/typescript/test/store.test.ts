/** SemmemStore's own cases: LangGraph.js's batch semantics, the filter operators semmem lacks,
 * TTL (an extension), and the namespace ↔ partition mapping. */

import assert from "node:assert/strict";
import { test } from "node:test";
import { InMemoryStore, type Operation } from "@langchain/langgraph-checkpoint";
import { InvalidArguments, SemmemClient } from "../src/index.js";
import { SemmemStore, partitionOf } from "../src/langgraph.js";
import { partition, servedClient } from "./support/server.js";

const served = servedClient();

test("a batch's reads see the state before its writes; of two puts of a key the last wins", async () => {
  const ns = ["users", partition()];
  for (const store of [new InMemoryStore(), new SemmemStore(served.client)]) {
    const ops: Operation[] = [
      { namespace: ns, key: "a", value: { v: 1 } },
      { namespace: ns, key: "a" },
      { namespacePrefix: ns, limit: 10, offset: 0 },
      { namespace: ns, key: "a", value: { v: 2 } },
    ];
    const results = await store.batch(ops);
    assert.deepEqual([results[0], results[1], results[2], results[3]], [null, null, [], null], store.constructor.name);
    assert.deepEqual((await store.get(ns, "a"))?.value, { v: 2 });
    await store.delete(ns, "a");
    assert.equal(await store.get(ns, "a"), null);
  }
});

test("put, get, search with a query and a filter, listNamespaces, delete", async () => {
  const user = partition();
  const store = new SemmemStore(served.client, { index: { fields: ["text"] } });
  await store.put(["users", user, "food"], "tea", { text: "Alice drinks green tea", rating: 5 });
  await store.put(["users", user, "food"], "fries", { text: "Alice likes fries", rating: 2 });
  await store.put(["users", user, "music"], "cello", { text: "Alice plays the cello", rating: 4 });
  const item = await store.get(["users", user, "food"], "tea");
  assert.ok(item && item.createdAt instanceof Date && item.updatedAt instanceof Date);
  const found = await store.search(["users", user], { query: "green tea", filter: { rating: { $gte: 4 } } });
  assert.deepEqual(found.map((f) => f.key), ["tea", "cello"]);
  assert.ok(found[0]!.score! > found[1]!.score!);
  assert.deepEqual(await store.listNamespaces({ prefix: ["users", user] }), [["users", user, "food"], ["users", user, "music"]]);
  assert.deepEqual(await store.listNamespaces({ prefix: ["users", user], maxDepth: 2 }), [["users", user]]);
  assert.deepEqual(await store.listNamespaces({ prefix: ["users", user], suffix: ["music"] }), [["users", user, "music"]]);
  assert.deepEqual(await store.listNamespaces({ prefix: ["users", user], limit: 1, offset: 1 }), [["users", user, "music"]]);
  await store.delete(["users", user, "music"], "cello");
  assert.deepEqual(await store.listNamespaces({ prefix: ["users", user] }), [["users", user, "food"]]);
  // A namespace is a partition: the owner sees it under that name.
  assert.equal(partitionOf(["users", user, "food"]), `users/${user}/food`);
});

test("LangGraph.js's $in and $nin are refused by the server (semmem has LangGraph's six operators)", async () => {
  const store = new SemmemStore(served.client);
  await assert.rejects(store.search(["users"], { filter: { tag: { $in: ["a"] } } }), InvalidArguments);
});

test("ttlMinutes makes every put expire (LangGraph.js has no TTL of its own)", async () => {
  const ns = ["ttl", partition()];
  await new SemmemStore(served.client, { ttlMinutes: 5 }).put(ns, "k", { v: 1 });
  const [got] = await served.client.store([{ op: "get", namespace: ns, key: "k" }]) as [{ expiresAt: string | null }];
  const left = Date.parse(got.expiresAt!) - Date.now();
  assert.ok(left > 4 * 60_000 && left <= 5 * 60_000, `expires in ${left} ms`);
  await new SemmemStore(served.client).put(ns, "k", { v: 2 });
  const [again] = await served.client.store([{ op: "get", namespace: ns, key: "k" }]) as [{ expiresAt: string | null }];
  assert.equal(again.expiresAt, null);
});
