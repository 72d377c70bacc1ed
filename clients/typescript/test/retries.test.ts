/** The contract's retry rules through a scripted proxy that drops, delays and fails requests:
 * attempts counted, bodies and operation ids compared, waits measured. */

import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import { SemmemClient, TransportError, Unavailable, InvalidRequest, type WriteResult } from "../src/index.js";
import { Proxy } from "./support/proxy.js";
import { ADMIN_TOKEN, PATH, Server, TOKEN, partition } from "./support/server.js";

let server: Server;
let proxy: Proxy;
let client: SemmemClient;
let direct: SemmemClient;
before(async () => {
  server = await Server.start();
  proxy = await new Proxy(server.url).start();
  client = new SemmemClient({ url: proxy.url, token: TOKEN, memoryPath: PATH });
  direct = new SemmemClient({ url: server.url, token: TOKEN, adminToken: ADMIN_TOKEN, memoryPath: PATH });
});
after(async () => { await proxy?.stop(); await server?.stop(); });

function ids(): string[] {
  return proxy.seen.map((s) => (JSON.parse(s.body) as { operationId: string }).operationId);
}

function gaps(): number[] {
  return proxy.seen.slice(1).map((s, i) => s.at - proxy.seen[i]!.at);
}

test("a recall is retried twice, after 250 ms and 1 s, with the same body", async () => {
  const p = partition();
  proxy.plan({ kind: "drop" }, { kind: "fail", status: 503, code: "unavailable" });
  const recall = await client.recall(p, "tea");
  assert.equal(recall.text, "");
  assert.equal(proxy.seen.length, 3);
  assert.equal(new Set(proxy.seen.map((s) => s.body)).size, 1);  // same bytes, same operation id
  const [first, second] = gaps();
  assert.ok(first! >= 250 && first! < 1000, `first wait ${first}`);
  assert.ok(second! >= 1000 && second! < 2500, `second wait ${second}`);
});

test("at most two retries: the third failure is thrown, typed", async () => {
  proxy.plan(...Array.from({ length: 3 }, () => ({ kind: "fail" as const, status: 503, code: "unavailable" })));
  await assert.rejects(client.recall(partition(), "x"), (e: unknown) => e instanceof Unavailable && e.status === 503);
  assert.equal(proxy.seen.length, 3);
});

test("408 and 429 are retried; other 4xx are final", async () => {
  proxy.plan({ kind: "fail", status: 408, code: "request_timeout" }, { kind: "fail", status: 429, code: "overloaded" });
  await client.recall(partition(), "x");
  assert.equal(proxy.seen.length, 3);
  proxy.plan({ kind: "fail", status: 400, code: "invalid_request" });
  await assert.rejects(client.recall(partition(), "x"), InvalidRequest);
  assert.equal(proxy.seen.length, 1);
});

test("a valid Retry-After replaces the wait when it fits the deadline, else the rule's wait", async () => {
  proxy.plan({ kind: "fail", status: 429, code: "rate_limited", retryAfter: "2" });
  await client.recall(partition(), "x");
  assert.ok(gaps()[0]! >= 2000, `waited ${gaps()[0]}`);
  // Past the deadline (10 s): the rule's 250 ms instead.
  proxy.plan({ kind: "fail", status: 429, code: "rate_limited", retryAfter: "60" });
  await client.recall(partition(), "x");
  assert.ok(gaps()[0]! >= 250 && gaps()[0]! < 1000, `waited ${gaps()[0]}`);
  // Not a valid header: the rule's wait.
  proxy.plan({ kind: "fail", status: 503, code: "unavailable", retryAfter: "1.5" });
  await client.recall(partition(), "x");
  assert.ok(gaps()[0]! < 1000, `waited ${gaps()[0]}`);
  // An HTTP date two seconds ahead.
  const at = new Date(Date.now() + 2500).toUTCString();
  proxy.plan({ kind: "fail", status: 503, code: "unavailable", retryAfter: at });
  await client.recall(partition(), "x");
  assert.ok(gaps()[0]! >= 1000, `waited ${gaps()[0]}`);
});

test("an idempotent write whose reply was lost is retried with the same id and replayed, not applied twice", async () => {
  const p = partition();
  proxy.plan({ kind: "lose-reply" }, { kind: "drop" });
  const result = await client.remember(p, "Dana plays the cello") as Exclude<WriteResult, { status: "uncertain" }>;
  assert.equal(result.status, "stored");
  assert.equal(proxy.seen.length, 3);
  assert.equal(new Set(proxy.seen.map((s) => s.body)).size, 1);
  assert.equal(new Set(ids()).size, 1);
  assert.deepEqual((await direct.export(p)).map((i) => i.text), ["Dana plays the cello"]);
  assert.equal(result.n, 1);
});

test("a non-idempotent write whose transport fails answers uncertain, without retry", async () => {
  const p = partition();
  proxy.plan({ kind: "lose-reply" });
  const result = await client.tool(p, "remember", { text: "Eve keeps bees" }, { idempotent: false });
  assert.deepEqual(result, { status: "uncertain" });
  assert.equal(proxy.seen.length, 1);
  assert.equal((await direct.export(p)).length, 1);  // it did commit: a timeout proves nothing
  // An answered failure is not retried either, and is thrown.
  proxy.plan({ kind: "fail", status: 503, code: "unavailable" });
  await assert.rejects(client.tool(p, "remember", { text: "Eve keeps wasps" }, { idempotent: false }), Unavailable);
  assert.equal(proxy.seen.length, 1);
  // A deadline that cuts the attempt is a transport failure too.
  proxy.plan({ kind: "delay", ms: 1500 });
  assert.deepEqual(await client.tool(p, "remember", { text: "Eve keeps ants" }, { idempotent: false, timeoutMs: 300 }),
    { status: "uncertain" });
  assert.equal(proxy.seen.length, 1);
});

test("the deadline spans every attempt: a slow server ends in a transport error at the deadline", async () => {
  proxy.plan({ kind: "delay", ms: 3000 }, { kind: "delay", ms: 3000 }, { kind: "delay", ms: 3000 });
  const started = performance.now();
  await assert.rejects(client.recall(partition(), "x", 100, { timeoutMs: 800 }), TransportError);
  const took = performance.now() - started;
  assert.ok(took < 2900, `took ${took}`);  // not the proxy's 3 s
  // 800 ms: one attempt cut at its deadline; no retry fits (250 ms would start past it).
  assert.equal(proxy.seen.length, 1);
  const body = JSON.parse(proxy.seen[0]!.body) as { deadlineAt: string };
  assert.ok(Math.abs(Date.parse(body.deadlineAt) - (Date.now() - took + 800)) < 500);
});

test("an abort signal cancels the call, its retries too", async () => {
  proxy.plan({ kind: "drop" }, { kind: "drop" });
  const controller = new AbortController();
  const call = client.recall(partition(), "x", 100, { signal: controller.signal });
  setTimeout(() => controller.abort(new Error("user cancelled")), 100);
  await assert.rejects(call, /user cancelled/);
  // Settled: no retry of it follows; the next request through the proxy is the next one seen.
  assert.equal(proxy.seen.length, 1);
  proxy.plan();
  await client.recall(partition(), "y", 100);
  assert.deepEqual(proxy.seen.map((s) => (JSON.parse(s.body) as { input: { text: string } }).input.text), ["y"]);
});

test("each call has its own operation id; a retry keeps it", async () => {
  const p = partition();
  proxy.plan({ kind: "forward" }, { kind: "drop" });
  await client.recall(p, "a");
  await client.search(p, "b");
  const [a, b, c] = ids();
  assert.notEqual(a, b);
  assert.equal(b, c);
  assert.match(a!, /^ts-[0-9a-f]{32}$/);
});
