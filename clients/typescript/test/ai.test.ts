/** The AI SDK middleware and tools against a real server, on the AI SDK's mock model. */

import assert from "node:assert/strict";
import { test } from "node:test";
import { generateText, stepCountIs, streamText, wrapLanguageModel } from "ai";
import { MockLanguageModelV4, convertArrayToReadableStream } from "ai/test";
import { DECLARED_TOOLS, SemmemClient } from "../src/index.js";
import { latestUserText, semmemMemory } from "../src/ai.js";
import { main } from "../examples/ai-agent.js";
import { partition, servedClient } from "./support/server.js";

const served = servedClient();

const usage = {
  inputTokens: { total: 1, noCache: 1, cacheRead: undefined, cacheWrite: undefined },
  outputTokens: { total: 1, text: 1, reasoning: undefined },
};

test("the example: the agent remembers with its tool, then recalls into the system prompt; turns ingested", async () => {
  const p = partition();
  const replies = await main(served.client, p, "chat-ex");
  assert.equal(replies[0], "Noted.");
  assert.ok(replies[1]!.startsWith("From memory: 1. Ada's favourite drink is green tea"), replies[1]);
  const exported = await served.client.export(p);
  assert.ok(exported.some((i) => i.text === "Ada's favourite drink is green tea"));
  const [session] = await served.client.sessions(p);
  assert.equal(session?.sessionId, "chat-ex");
  assert.equal(session?.messages, 4);  // two turns: the user's text and the answer each
});

test("the middleware recalls with the latest user text and respects maxBytes; the system prompt keeps its own text", async () => {
  const p = partition();
  for (const fact of ["Bob owns a red bicycle", "Bob's sister lives in Oslo", "Bob dislikes mushrooms"]) await served.client.remember(p, fact);
  const model = new MockLanguageModelV4({ doGenerate: { content: [{ type: "text", text: "ok" }], finishReason: { unified: "stop", raw: undefined }, usage, warnings: [] } });
  const memory = semmemMemory({ client: served.client, partition: p, maxBytes: 30 });
  await generateText({ model: wrapLanguageModel({ model, middleware: memory.middleware }), system: "Be brief.",
    messages: [{ role: "user", content: "hello" }, { role: "assistant", content: "hi" }, { role: "user", content: "Bob's sister lives in which city?" }] });
  const system = model.doGenerateCalls[0]!.prompt[0]!;
  assert.equal(system.role, "system");
  const content = system.content as string;
  assert.ok(content.startsWith("Be brief.\n\n"));
  const lines = content.split("\n").filter((l) => /^\d+\. /.test(l));
  assert.deepEqual(lines, ["2. Bob's sister lives in Oslo"]);
  assert.ok(Buffer.byteLength(memory.recalled!.text) <= 30);
  assert.equal(typeof memory.recalled!.cursor, "string");
});

test("a streamed turn is ingested once it finishes (opt-in); without ingest nothing is", async () => {
  const p = partition();
  const stream = () => new MockLanguageModelV4({ doStream: { stream: convertArrayToReadableStream([
    { type: "text-start", id: "t" }, { type: "text-delta", id: "t", delta: "Hello " }, { type: "text-delta", id: "t", delta: "there" },
    { type: "text-end", id: "t" }, { type: "finish", finishReason: { unified: "stop", raw: undefined }, usage },
  ]) } });
  const plain = semmemMemory({ client: served.client, partition: p });
  await streamText({ model: wrapLanguageModel({ model: stream(), middleware: plain.middleware }), prompt: "Hi" }).text;
  assert.deepEqual(await served.client.sessions(p), []);
  const memory = semmemMemory({ client: served.client, partition: p, ingest: { sessionId: "s1" } });
  const text = await streamText({ model: wrapLanguageModel({ model: stream(), middleware: memory.middleware }), prompt: "Hi" }).text;
  assert.equal(text, "Hello there");
  await memory.settled();  // ingested in the background
  const session = await served.client.session(p, "s1");
  assert.deepEqual((session["messages"] as { role: string }[]).map((m) => m.role), ["user", "assistant"]);
});

test("the tools are semmem's declarations, take no partition, and carry the recall's cursor; refusals reach the model", async () => {
  const p = partition();
  const memory = semmemMemory({ client: served.client, partition: p });
  assert.deepEqual(Object.keys(memory.tools), DECLARED_TOOLS.map((t) => `memory_${t.name}`));
  for (const t of DECLARED_TOOLS) {
    const schema = t.input as { properties: Record<string, unknown>; additionalProperties: boolean };
    assert.equal(schema.additionalProperties, false);
    assert.ok(!("partition" in schema.properties));
  }
  const stored = await served.client.remember(p, "Carol likes jazz") as { n: number };
  // A model call recalls (the cursor), then the fact changes behind its back: the update conflicts.
  const model = new MockLanguageModelV4({ doGenerate: { content: [{ type: "text", text: "ok" }], finishReason: { unified: "stop", raw: undefined }, usage, warnings: [] } });
  await generateText({ model: wrapLanguageModel({ model, middleware: memory.middleware }), prompt: "music?" });
  await served.client.update(p, stored.n, "Carol likes blues");
  const execute = memory.tools["memory_update"]!.execute!;
  const refused = await execute({ n: stored.n, text: "Carol likes soul" }, { toolCallId: "c1", messages: [] } as never);
  assert.equal((refused as { error: { code: string } }).error.code, "conflict");
  const found = await memory.tools["memory_search"]!.execute!({ query: "blues" }, { toolCallId: "c2", messages: [] } as never);
  assert.equal((found as { items: { text: string }[] }).items[0]!.text, "Carol likes blues");
});

test("latestUserText: the last user message's text parts, null without one", () => {
  assert.equal(latestUserText([{ role: "system", content: "s" }]), null);
  assert.equal(latestUserText([{ role: "user", content: [{ type: "text", text: "a" }, { type: "text", text: "b" }] },
    { role: "assistant", content: [{ type: "text", text: "c" }] }]), "a\nb");
});
