/** The LangGraph.js example: a compiled graph with SemmemStore as its store, on a fake chat model. */

import assert from "node:assert/strict";
import { test } from "node:test";
import { SemmemClient } from "../src/index.js";
import { SemmemStore } from "../src/langgraph.js";
import { buildGraph, main } from "../examples/langgraph-store.js";
import { HumanMessage } from "@langchain/core/messages";
import { FakeListChatModel } from "@langchain/core/utils/testing";
import { partition, servedClient } from "./support/server.js";

const served = servedClient();

test("the example: the graph stores a memory in semmem and finds it on the next turn", async () => {
  const user = partition();
  const { replies, memories } = await main(served.client, user);
  assert.deepEqual(replies, ["Nice to know!", "You like green tea."]);
  assert.deepEqual(memories, ["I like green tea"]);
  // The store's items live in the namespace's partition (what an owner deletes).
  assert.equal(await served.client.deletePartition(`memories/${user}`), true);
  assert.deepEqual(await new SemmemStore(served.client).search(["memories", user]), []);
});

test("the node's system prompt holds what the store found", async () => {
  const user = partition();
  const store = new SemmemStore(served.client, { index: { fields: ["text"] } });
  await store.put(["memories", user], "m1", { text: "I play the cello" });
  const model = new FakeListChatModel({ responses: ["ok"] });
  const seen: string[] = [];
  model.invoke = (async (messages: { content: unknown }[]) => { seen.push(String(messages[0]!.content)); return FakeListChatModel.prototype.invoke.call(model, messages as never); }) as never;
  await buildGraph(store, model).invoke({ messages: [new HumanMessage("music?")] }, { configurable: { userId: user } });
  assert.equal(seen[0], "Memories of this user:\n- I play the cello");
});
