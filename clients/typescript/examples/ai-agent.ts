/**
 * An AI SDK agent with semmem memory, on a scripted model (the AI SDK's `MockLanguageModelV4`):
 * the first turn tells the agent a fact and the model remembers it with the `memory_remember`
 * tool; the second turn asks about it, and the middleware's recall puts the fact into the
 * system prompt before the model is called. Both turns are ingested as a conversation.
 *
 *     SEMMEM_URL=http://127.0.0.1:8080 SEMMEM_TOKEN=… node dist/examples/ai-agent.js
 */

import { generateText, stepCountIs, wrapLanguageModel } from "ai";
import { MockLanguageModelV4 } from "ai/test";
import { SemmemClient } from "../src/index.js";
import { semmemMemory } from "../src/ai.js";

type Params = Parameters<MockLanguageModelV4["doGenerate"]>[0];

const usage = {
  inputTokens: { total: 10, noCache: 10, cacheRead: undefined, cacheWrite: undefined },
  outputTokens: { total: 5, text: 5, reasoning: undefined },
};

/** The scripted model: remembers what the user says about themselves, answers from the
 * system prompt's recalled lines otherwise. */
export function scriptedModel(): MockLanguageModelV4 {
  return new MockLanguageModelV4({
    doGenerate: async (params: Params) => {
      const system = params.prompt.find((m) => m.role === "system")?.content ?? "";
      const last = params.prompt.at(-1)!;
      const user = [...params.prompt].reverse().find((m) => m.role === "user");
      const said = user?.role === "user" ? user.content.map((p) => (p.type === "text" ? p.text : "")).join("") : "";
      if (last.role === "user" && said.startsWith("Remember:")) {
        return { content: [{ type: "tool-call", toolCallId: "call-1", toolName: "memory_remember",
          input: JSON.stringify({ text: said.slice("Remember:".length).trim() }) }],
        finishReason: { unified: "tool-calls", raw: undefined }, usage, warnings: [] };
      }
      const text = last.role === "tool" ? "Noted." : `From memory: ${system.split("\n").filter((l) => /^\d+\. /.test(l)).join(" | ") || "nothing"}`;
      return { content: [{ type: "text", text }], finishReason: { unified: "stop", raw: "stop" }, usage, warnings: [] };
    },
  });
}

export async function main(client: SemmemClient, partition: string, sessionId = "chat-1"): Promise<string[]> {
  const memory = semmemMemory({ client, partition, ingest: { sessionId } });
  const model = wrapLanguageModel({ model: scriptedModel(), middleware: memory.middleware });
  const replies: string[] = [];
  for (const prompt of ["Remember: Ada's favourite drink is green tea", "What does Ada like to drink?"]) {
    const result = await generateText({ model, tools: memory.tools, prompt, stopWhen: stepCountIs(3) });
    replies.push(result.text);
  }
  await memory.settled();  // the turns are ingested in the background
  return replies;
}

if (import.meta.url === `file://${process.argv[1]}`) {
  for (const reply of await main(new SemmemClient(), process.env["SEMMEM_PARTITION"] ?? "example-user")) console.log(reply);
}
