/**
 * A LangGraph.js graph whose long-term memory is semmem: the graph is compiled with
 * `store: new SemmemStore(client)`, and its node reads and writes the user's memories through
 * `config.store` — on a scripted chat model (`FakeListChatModel` from @langchain/core).
 *
 *     SEMMEM_URL=http://127.0.0.1:8080 SEMMEM_TOKEN=… node dist/examples/langgraph-store.js
 */

import { AIMessage, HumanMessage, SystemMessage } from "@langchain/core/messages";
import { FakeListChatModel } from "@langchain/core/utils/testing";
import { END, MessagesAnnotation, START, StateGraph, type LangGraphRunnableConfig } from "@langchain/langgraph";
import { SemmemClient } from "../src/index.js";
import { SemmemStore } from "../src/langgraph.js";

/** The graph: one node that searches the user's memories, answers with them in its system
 * prompt, and stores what the user says about themselves ("I …"). */
export function buildGraph(store: SemmemStore, model = new FakeListChatModel({ responses: ["Nice to know!", "You like green tea."] })) {
  async function respond(state: typeof MessagesAnnotation.State, config: LangGraphRunnableConfig) {
    const userId = config.configurable?.["userId"] as string;
    const namespace = ["memories", userId];
    const said = String(state.messages.at(-1)!.content);
    const memories = await config.store!.search(namespace, { query: said, limit: 3 });
    const system = `Memories of this user:\n${memories.map((m) => `- ${m["value"]["text"]}`).join("\n")}`;
    const answer = await model.invoke([new SystemMessage(system), ...state.messages]);
    if (said.startsWith("I ")) await config.store!.put(namespace, `m${memories.length + 1}`, { text: said });
    return { messages: [answer] };
  }
  return new StateGraph(MessagesAnnotation).addNode("respond", respond)
    .addEdge(START, "respond").addEdge("respond", END).compile({ store });
}

export async function main(client: SemmemClient, userId: string): Promise<{ replies: string[]; memories: string[] }> {
  const store = new SemmemStore(client, { index: { fields: ["text"] } });
  const graph = buildGraph(store);
  const replies: string[] = [];
  for (const text of ["I like green tea", "What do I like?"]) {
    const out = await graph.invoke({ messages: [new HumanMessage(text)] }, { configurable: { userId } });
    replies.push(String((out.messages.at(-1) as AIMessage).content));
  }
  const memories = (await store.search(["memories", userId])).map((m) => String(m.value["text"]));
  return { replies, memories };
}

if (import.meta.url === `file://${process.argv[1]}`) {
  console.log(await main(new SemmemClient(), process.env["SEMMEM_PARTITION"] ?? "example-user"));
}
