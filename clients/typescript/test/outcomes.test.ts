/** Retries that never lie (issue 62, items 9 and 10): a write the server does not deduplicate
 * (a store batch that puts or deletes, the owner's deleting and retention calls) is not
 * repeated once it may have run, and its lost reply ends in an error that says the outcome is
 * uncertain; a write with an operation id that still fails after a lost reply says so and
 * carries the id, whose replay the server answers once. Store calls take the client's
 * `timeoutMs`; a burst of calls rides out the server's 429s until the deadline. Through a
 * scripted proxy in front of a real server. */

import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import { NotFound, SemmemClient, SemmemError, TransportError, Unavailable } from "../src/index.js";
import { SemmemStore } from "../src/langgraph.js";
import { Proxy } from "./support/proxy.js";
import { ADMIN_TOKEN, PATH, Server, TOKEN, partition } from "./support/server.js";

let server: Server;
let proxy: Proxy;
let client: SemmemClient;
let direct: SemmemClient;
before(async () => {
  server = await Server.start();
  proxy = await new Proxy(server.url).start();
  client = new SemmemClient({ url: proxy.url, token: TOKEN, adminToken: ADMIN_TOKEN, memoryPath: PATH });
  direct = new SemmemClient({ url: server.url, token: TOKEN, adminToken: ADMIN_TOKEN, memoryPath: PATH });
});
after(async () => { await proxy?.stop(); await server?.stop(); });

function uncertain(error: unknown): boolean {
  return error instanceof SemmemError && error.uncertain && /the outcome is uncertain/.test(error.message);
}

test("a store batch that writes is not repeated after a lost reply: another client's delete in between stays", async () => {
  const ns = ["users", partition()];
  proxy.plan({ kind: "lose-reply" });
  const put = client.store([{ op: "put", namespace: ns, key: "k", value: { v: 1 }, index: [] }]);
  await assert.rejects(put, (e: unknown) => e instanceof TransportError && uncertain(e) && e.operationId === undefined);
  assert.equal(proxy.seen.length, 1);
  // It did commit; a delete made by another client after it is not undone by a repeat.
  const [got] = await direct.store([{ op: "get", namespace: ns, key: "k" }]) as [{ value: unknown } | null];
  assert.deepEqual(got?.value, { v: 1 });
  await direct.store([{ op: "put", namespace: ns, key: "k", value: null }]);
  // The call settled after its last attempt (the client awaits every retry before it answers),
  // so the next request through the proxy is the next one it sees: no repeat of the put.
  assert.deepEqual(await client.store([{ op: "get", namespace: ns, key: "k" }]), [null]);
  assert.deepEqual(proxy.seen.map((s) => (JSON.parse(s.body) as { ops: { op: string }[] }).ops[0]!.op), ["put", "get"]);
  // Refused at admission (429: nothing ran) it is retried; a batch of reads is retried as any read.
  proxy.plan({ kind: "fail", status: 429, code: "overloaded", retryAfter: "0" }, { kind: "forward" }, { kind: "drop" });
  await client.store([{ op: "put", namespace: ns, key: "k2", value: { v: 2 }, index: [] }]);
  assert.deepEqual(await client.store([{ op: "get", namespace: ns, key: "k2" }]).then((r) => (r[0] as { value: unknown }).value), { v: 2 });
  assert.equal(proxy.seen.length, 4);
});

test("SemmemStore's put whose reply was lost is reported uncertain, not retried", async () => {
  const store = new SemmemStore(client);
  const ns = ["users", partition()];
  proxy.plan({ kind: "lose-reply" });
  await assert.rejects(store.put(ns, "a", { x: 1 }), uncertain);
  assert.equal(proxy.seen.length, 1);
});

test("the owner's writes are not repeated after a lost reply: the error says uncertain, never the repeat's answer", async () => {
  const p = partition();
  await direct.remember(p, "Finn sails on Sundays");
  proxy.plan({ kind: "lose-reply" });
  await assert.rejects(client.deletePartition(p), uncertain);  // was: false, for the partition it deleted
  assert.equal(proxy.seen.length, 1);
  assert.equal(await direct.deletePartition(p), false);  // the first attempt did delete it

  const q = partition();
  await direct.ingest(q, "chat", [{ role: "user", content: "Gus repairs clocks" }]);
  proxy.plan({ kind: "lose-reply" });
  await assert.rejects(client.forgetSession(q, "chat"), uncertain);  // was: NotFound
  assert.equal(proxy.seen.length, 1);
  await assert.rejects(direct.forgetSession(q, "chat"), NotFound);

  const r = partition();
  await direct.ingest(r, "chat", [{ role: "user", content: "Hana climbs" }]);
  proxy.plan({ kind: "lose-reply" });
  await assert.rejects(client.setRetention(r, "30d"), uncertain);  // was: expired: []
  assert.equal(proxy.seen.length, 1);
  assert.equal((await direct.retention(r))["override"], "30d");  // the first attempt set it

  // Reads still retry.
  proxy.plan({ kind: "drop" });
  assert.ok(Array.isArray(await client.sessions(r)));
  assert.equal(proxy.seen.length, 2);
});

test("a write with an operation id that fails after a lost reply is uncertain and carries the id; its replay answers once", async () => {
  const p = partition();
  proxy.plan({ kind: "lose-reply" }, { kind: "fail", status: 503, code: "unavailable" }, { kind: "fail", status: 503, code: "unavailable" });
  let failure: SemmemError | undefined;
  await client.ingest(p, "s", [{ role: "user", content: "Ivy collects stamps" }]).catch((e: SemmemError) => { failure = e; });
  assert.ok(failure instanceof Unavailable, String(failure));
  assert.ok(uncertain(failure));
  const id = (JSON.parse(proxy.seen[0]!.body) as { operationId: string }).operationId;
  assert.equal(failure.operationId, id);
  assert.ok(failure.message.includes(id));
  const replay = await client.ingest(p, "s", [{ role: "user", content: "Ivy collects stamps" }], { operationId: id });
  assert.equal(replay.count, 1);
  assert.equal((await direct.export(p)).length, 1);  // stored once
  // A refusal the server answered at once is not uncertain.
  proxy.plan({ kind: "fail", status: 400, code: "invalid_request" });
  await assert.rejects(client.ingest(p, "s", [{ role: "user", content: "x" }]), (e: SemmemError) => !e.uncertain);
  // An idempotent tool whose every attempt lost its reply: uncertain, with its id.
  proxy.plan({ kind: "lose-reply" }, { kind: "lose-reply" }, { kind: "lose-reply" });
  await assert.rejects(client.remember(p, "Ivy also collects coins"),
    (e: SemmemError) => e instanceof TransportError && uncertain(e) && e.operationId === (JSON.parse(proxy.seen[0]!.body) as { operationId: string }).operationId);
});

test("store calls take the client's timeoutMs (not a fixed 120 s)", async () => {
  const quick = new SemmemClient({ url: proxy.url, token: TOKEN, memoryPath: PATH, timeoutMs: 600 });
  assert.equal(quick.writeTimeoutMs, 600);
  assert.equal(new SemmemClient({ url: proxy.url }).writeTimeoutMs, 120_000);
  assert.equal(new SemmemClient({ url: proxy.url, timeoutMs: 600, writeTimeoutMs: 5000 }).writeTimeoutMs, 5000);
  // By default a store read takes the client's 10 s: a hung server holds a graph node no longer.
  const plain = new SemmemClient({ url: proxy.url, token: TOKEN, memoryPath: PATH });
  proxy.plan({ kind: "delay", ms: 12_000 }, { kind: "delay", ms: 12_000 });
  const read = performance.now();
  await assert.rejects(new SemmemStore(plain).search(["users", "x"]), TransportError);
  const took = performance.now() - read;
  assert.ok(took >= 9_000 && took < 11_500, `a store read gave up after ${took} ms`);
  proxy.plan({ kind: "delay", ms: 4000 });
  const started = performance.now();
  await assert.rejects(quick.store([{ op: "get", namespace: ["users", "x"], key: "k" }]), TransportError);
  assert.ok(performance.now() - started < 1500, `took ${performance.now() - started} ms`);
  const body = proxy.seen[0]!;
  assert.equal(body.path, "/store");
  // SemmemStore's calls too.
  proxy.plan({ kind: "delay", ms: 4000 });
  const at = performance.now();
  await assert.rejects(new SemmemStore(quick).get(["users", "x"], "k"), TransportError);
  assert.ok(performance.now() - at < 1500);
});

test("a burst of 200 calls from one client against a server that admits 4 at a time: none fails Overloaded", async () => {
  // The calls ride out the 429s until their deadline (two retries gave up after 2–3 s). The
  // deadline here is 30 s, not the default 10 s: the burst's length is the server's throughput,
  // and the shared test machine may be busy (idle, all 200 end within 10 s).
  const busy = await Server.start({ env: { SEMMEM_MAX_CONCURRENCY: "4" } });
  const counting = await new Proxy(busy.url).start();
  try {
    const burst = new SemmemClient({ url: counting.url, token: TOKEN, memoryPath: PATH, timeoutMs: 30_000 });
    const p = partition();
    await burst.remember(p, "Jo bakes sourdough");
    const started = performance.now();
    const results = await Promise.allSettled(Array.from({ length: 200 }, (_, i) => burst.recall(p, `bread ${i}`)));
    const failed = results.filter((r) => r.status === "rejected").map((r) => String((r as PromiseRejectedResult).reason));
    assert.deepEqual(failed.slice(0, 3), [], `${failed.length} of 200 failed after ${performance.now() - started} ms`);
    assert.ok(counting.seen.length > 201, `${counting.seen.length} requests: the server refused some (429)`);
  } finally {
    await counting.stop();
    await busy.stop();
  }
});
