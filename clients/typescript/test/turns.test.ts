/** A turn never fails because of memory (issue 62, item 8): a user message far over the
 * contract's 64 KiB body still recalls (its start and end); a recall that fails or hangs leaves
 * the model called without memory, told to `onError` (a console warning by default); a stuck
 * ingestion never holds a finished answer back, and the call's `abortSignal` stops it. Through
 * a scripted proxy in front of a real server. */

import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import { generateText, streamText, wrapLanguageModel } from "ai";
import { MockLanguageModelV4, convertArrayToReadableStream } from "ai/test";
import { SemmemClient, TransportError, Unavailable } from "../src/index.js";
import { semmemMemory } from "../src/ai.js";
import { MAX_BODY_BYTES, recallText, utf8Head, utf8Tail } from "../src/wire.js";
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

const usage = {
  inputTokens: { total: 1, noCache: 1, cacheRead: undefined, cacheWrite: undefined },
  outputTokens: { total: 1, text: 1, reasoning: undefined },
};

function answering(text = "ok"): MockLanguageModelV4 {
  return new MockLanguageModelV4({ doGenerate: { content: [{ type: "text", text }], finishReason: { unified: "stop", raw: undefined }, usage, warnings: [] } });
}

function system(model: MockLanguageModelV4): string {
  const first = model.doGenerateCalls[0]!.prompt[0]!;
  return first.role === "system" ? first.content : "";
}

test("a 91 KB user message recalls by its start and end within the body limit; the model is called with memory", async () => {
  const p = partition();
  await direct.remember(p, "The build server quokka logs ERROR worker connection reset by peer when its disk is full");
  const log = Array.from({ length: 1600 }, (_, i) => `2026-12-07T10:${String(i % 60).padStart(2, "0")} ERROR worker ${i}: connection reset by peer ✗`).join("\n");
  const message = `Why does the build server quokka fail? Here is the log:\n${log}`;
  assert.ok(Buffer.byteLength(message) > 91_000);
  const model = answering();
  const errors: unknown[] = [];
  const memory = semmemMemory({ client, partition: p, onError: (e) => errors.push(e) });
  proxy.plan();
  const result = await generateText({ model: wrapLanguageModel({ model, middleware: memory.middleware }), prompt: message });
  assert.equal(result.text, "ok");
  assert.deepEqual(errors, []);
  assert.ok(memory.recalled !== undefined);
  assert.ok(system(model).includes("1. The build server quokka logs"), system(model));
  const sent = proxy.seen[0]!;
  assert.ok(Buffer.byteLength(sent.body) <= MAX_BODY_BYTES, `${Buffer.byteLength(sent.body)} bytes sent`);
  const text = (JSON.parse(sent.body) as { input: { text: string } }).input.text;
  assert.ok(text.startsWith("Why does the build server quokka fail?"));
  assert.ok(text.endsWith("worker 1599: connection reset by peer ✗"));
});

test("recallText cuts by UTF-8 bytes on character boundaries, escapes counted", () => {
  assert.equal(recallText("short"), "short");
  assert.equal(utf8Head("a😀b", 4), "a");  // the emoji's four bytes do not fit after 'a'
  assert.equal(utf8Tail("a😀b", 5), "😀b");
  for (const unit of ["😀", "é", "\u0001", "\""]) {
    const cut = recallText(unit.repeat(50_000), 1000);
    assert.ok(Buffer.byteLength(JSON.stringify(cut)) <= 1000, unit);
    assert.ok(!/[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/.test(cut), "no half surrogate pair");
    assert.ok(cut.length > 0);
  }
});

test("a recall that fails (an outage) degrades to no memory, reported to onError; the turn is answered", async () => {
  const p = partition();
  await direct.remember(p, "Erin keeps bees");
  const failures = Array.from({ length: 3 }, () => ({ kind: "fail" as const, status: 503, code: "unavailable" }));
  proxy.plan(...failures);
  const errors: [unknown, string][] = [];
  const model = answering("answered anyway");
  const memory = semmemMemory({ client, partition: p, onError: (e, phase) => errors.push([e, phase]) });
  const result = await generateText({ model: wrapLanguageModel({ model, middleware: memory.middleware }), prompt: "bees?" });
  assert.equal(result.text, "answered anyway");
  assert.equal(model.doGenerateCalls.length, 1);
  assert.equal(system(model), "");  // no memory in the prompt
  assert.equal(errors.length, 1);
  assert.ok(errors[0]![0] instanceof Unavailable);
  assert.equal(errors[0]![1], "recall");
  assert.equal(memory.recalled, undefined);
  // The server gone: the default hook warns (class and code, no token), the turn is answered.
  const gone = new SemmemClient({ url: "http://127.0.0.1:9", token: TOKEN, memoryPath: PATH, timeoutMs: 1500 });
  const warned: string[] = [];
  const warn = console.warn;
  console.warn = (...args: unknown[]) => { warned.push(args.join(" ")); };
  try {
    const plain = semmemMemory({ client: gone, partition: p });
    const again = await generateText({ model: wrapLanguageModel({ model: answering("still"), middleware: plain.middleware }), prompt: "bees?" });
    assert.equal(again.text, "still");
  } finally {
    console.warn = warn;
  }
  assert.equal(warned.length, 1);
  assert.match(warned[0]!, /^semmem: no memory for this model call: recall failed: TransportError \(transport\)$/);
});

test("a hung recall is cut at recallTimeoutMs: no memory, the turn answered", async () => {
  proxy.plan({ kind: "delay", ms: 5000 });
  const errors: unknown[] = [];
  const memory = semmemMemory({ client, partition: partition(), recallTimeoutMs: 500, onError: (e) => errors.push(e) });
  const started = performance.now();
  const result = await generateText({ model: wrapLanguageModel({ model: answering(), middleware: memory.middleware }), prompt: "x" });
  assert.equal(result.text, "ok");
  assert.ok(performance.now() - started < 2000);
  assert.ok(errors[0] instanceof TransportError);
});

test("a stuck ingestion does not hold the answer back; abortSignal stops it", async () => {
  const p = partition();
  const errors: [unknown, string][] = [];
  const memory = semmemMemory({ client, partition: p, ingest: { sessionId: "s" }, onError: (e, phase) => errors.push([e, phase]) });
  proxy.plan({ kind: "forward" }, { kind: "delay", ms: 8000 });  // the recall, then the ingestion hangs
  const controller = new AbortController();
  const started = performance.now();
  const result = await generateText({ model: wrapLanguageModel({ model: answering("done"), middleware: memory.middleware }),
    prompt: "remember this turn", abortSignal: controller.signal });
  assert.equal(result.text, "done");
  assert.ok(performance.now() - started < 1500, `answered after ${performance.now() - started} ms`);
  await new Promise<void>((resolve) => { const wait = (): void => { if (proxy.seen.length >= 2) resolve(); else setTimeout(wait, 10); }; wait(); });
  assert.equal(proxy.seen[1]!.path, "/ingest");
  controller.abort(new Error("the user left"));
  const aborted = performance.now();
  await memory.settled();
  assert.ok(performance.now() - aborted < 1000, "the abort ended the ingestion");
  assert.equal(errors.length, 1);
  assert.equal(errors[0]![1], "ingest");
  assert.match(String(errors[0]![0]), /the user left/);
});

test("a streamed answer ends before its ingestion does; settled() waits for it", async () => {
  const p = partition();
  const memory = semmemMemory({ client, partition: p, ingest: { sessionId: "s2" } });
  proxy.plan({ kind: "forward" }, { kind: "delay", ms: 1500 });
  const model = new MockLanguageModelV4({ doStream: { stream: convertArrayToReadableStream([
    { type: "text-start", id: "t" }, { type: "text-delta", id: "t", delta: "streamed" }, { type: "text-end", id: "t" },
    { type: "finish", finishReason: { unified: "stop", raw: undefined }, usage },
  ]) } });
  const started = performance.now();
  const text = await streamText({ model: wrapLanguageModel({ model, middleware: memory.middleware }), prompt: "hi" }).text;
  assert.equal(text, "streamed");
  assert.ok(performance.now() - started < 1200, `streamed in ${performance.now() - started} ms`);
  await memory.settled();
  const session = await direct.session(p, "s2");
  assert.deepEqual((session["messages"] as { role: string }[]).map((m) => m.role), ["user", "assistant"]);
});
