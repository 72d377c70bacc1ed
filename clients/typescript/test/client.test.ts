import assert from "node:assert/strict";
import { test } from "node:test";
import { inspect } from "node:util";
import {
  Conflict, InvalidArguments, NotFound, SemmemClient, Unauthorized, type Recall,
} from "../src/index.js";
import { ADMIN_TOKEN, partition, PATH, servedClient, TOKEN } from "./support/server.js";

const served = servedClient();

test("remember, recall, search, update, forget with the recall's cursor", async () => {
  const p = partition();
  const empty = await served.client.recall(p, "anything");
  assert.deepEqual([empty.text, empty.sources], ["", []]);
  const stored = await served.client.remember(p, "Alice prefers green tea");
  assert.equal(stored.status, "stored");
  assert.ok("n" in stored);
  const n = stored.n;
  const recalled: Recall = await served.client.recall(p, "what does Alice drink?");
  assert.match(recalled.text, new RegExp(`^${n}\\. Alice prefers green tea`));
  assert.equal(recalled.sources[0]!.id, n);
  assert.equal(typeof recalled.cursor, "string");
  const found = await served.client.search(p, "tea");
  assert.equal(found.items[0]!.n, n);
  const turn = await served.client.turn(p, "tea");
  assert.deepEqual(await turn.update(n, "Alice prefers black tea"), { count: 1, n, status: "stored" });
  // The fact changed after the first recall: an edit under its cursor is a conflict.
  await assert.rejects(served.client.forget(p, n, { cursor: recalled.cursor }), (e: unknown) =>
    e instanceof Conflict && e.status === 409 && e.code === "conflict");
  const forgotten = await served.client.forget(p, n, { cursor: (await served.client.recall(p, null)).cursor });
  assert.equal(forgotten.status, "stored");
  await assert.rejects(served.client.forget(p, n), NotFound);
});

test("a write's retry with the same operation id replays its result", async () => {
  const p = partition();
  const first = await served.client.remember(p, "Bob lives in Lyon", { operationId: "op-replay-1" });
  const again = await served.client.remember(p, "Bob lives in Lyon", { operationId: "op-replay-1" });
  assert.deepEqual(again, first);
  const items = await served.client.export(p);
  assert.equal(items.length, 1);
});

test("refusals are typed by their envelope code, and no error or inspection shows a token", async () => {
  const p = partition();
  const error = await served.client.remember(p, "   ").catch((e: unknown) => e);
  assert.ok(error instanceof InvalidArguments);
  assert.equal(error.status, 422);
  const wrong = new SemmemClient({ url: served.server.url, token: "not-the-token-at-all-0001", memoryPath: PATH });
  const refused = await wrong.recall(p, "x").catch((e: unknown) => e);
  assert.ok(refused instanceof Unauthorized);
  for (const shown of [inspect(served.client), String(served.client), JSON.stringify(served.client), inspect(refused),
    String((refused as Error).stack), inspect(wrong)]) {
    assert.ok(!shown.includes(TOKEN) && !shown.includes(ADMIN_TOKEN) && !shown.includes("not-the-token"), shown);
  }
});

test("ingest a conversation; the owner lists, reads and forgets its session", async () => {
  const p = partition();
  const messages = [
    { role: "user", content: "I just got an air fryer", at: "2023-05-20T10:00:00Z" },
    { role: "assistant", content: "Enjoy it!", at: new Date("2023-05-20T10:00:04Z") },
  ];
  const result = await served.client.ingest(p, "chat-42", messages);
  assert.equal(result.status, "stored");
  assert.equal(result.items.length, 2);
  // Sending the whole history again stores nothing twice.
  const again = await served.client.ingest(p, "chat-42", [...messages, { role: "user", content: "It makes great fries" }]);
  assert.deepEqual(again.items.slice(0, 2), result.items);
  assert.equal(again.items[2]!.length, 1);
  const sessions = await served.client.sessions(p);
  assert.deepEqual(sessions.map((s) => [s.sessionId, s.messages]), [["chat-42", 3]]);
  assert.equal(((await served.client.session(p, "chat-42"))["messages"] as unknown[]).length, 3);
  const forgotten = await served.client.forgetSession(p, "chat-42");
  assert.equal(forgotten.forgotten.length, 3);
  // The export's ledger lines (what was forgotten, as hashes, for `semmem import`) are not facts.
  const raw = await fetch(`${served.server.url}/admin/export?partition=${encodeURIComponent(p)}`,
    { headers: { authorization: `Bearer ${ADMIN_TOKEN}` } });
  assert.deepEqual((await raw.text()).trim().split("\n").map((l) => Object.keys(JSON.parse(l) as object).sort()[0]),
    ["digestKeys", "forgotten"]);
  assert.deepEqual(await served.client.export(p), []);
  await assert.rejects(served.client.forgetSession(p, "chat-42"), NotFound);
});

test("the owner's calls: export, retention, delete a partition", async () => {
  const p = partition();
  await served.client.remember(p, "Carol's birthday is in May");
  assert.deepEqual((await served.client.export(p)).map((i) => i.text), ["Carol's birthday is in May"]);
  const set = await served.client.setRetention(p, "30d");
  assert.equal(set["override"], "30d");
  assert.equal((await served.client.retention(p))["override"], "30d");
  assert.equal(await served.client.deletePartition(p), true);
  assert.deepEqual(await served.client.export(p), []);
  assert.equal(await served.client.deletePartition(p), false);
  const providerOnly = new SemmemClient({ url: served.server.url, token: TOKEN, memoryPath: PATH });
  assert.throws(() => providerOnly.export(p), /admin API/);
});

test("the store door: put, get, search, list, delete", async () => {
  const ns = ["users", partition()];
  const [put] = await served.client.store([{ op: "put", namespace: ns, key: "profile", value: { diet: "vegan" }, index: ["Alice is vegan"] }]);
  assert.ok(put && typeof put === "object");
  const [got, found] = await served.client.store([
    { op: "get", namespace: ns, key: "profile" },
    { op: "search", prefix: ns, query: "diet", limit: 5 },
  ]);
  assert.deepEqual((got as { value: unknown }).value, { diet: "vegan" });
  assert.equal((found as unknown[]).length, 1);
});

test("the server's tool declarations match the bundled ones", async () => {
  const bundled = served.client.tools.map((t) => [t.name, t.access, t.idempotent]);
  const loaded = await new SemmemClient({ url: served.server.url, memoryPath: PATH }).loadTools();
  assert.deepEqual(loaded.map((t) => [t.name, t.access, t.idempotent]), bundled);
  assert.deepEqual(loaded.map((t) => t.input), served.client.tools.map((t) => t.input));
});
