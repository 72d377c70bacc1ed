/**
 * semmem for the Vercel AI SDK (`ai`): a language-model middleware that recalls before each
 * model call and, opt-in, ingests the finished turn; and the memory tools for the model.
 *
 *     const memory = semmemMemory({ client, partition: userId, ingest: { sessionId: chatId } });
 *     const model = wrapLanguageModel({ model: openai("gpt-5"), middleware: memory.middleware });
 *     await generateText({ model, tools: memory.tools, prompt, stopWhen: stepCountIs(5) });
 *
 * The partition comes from the application (the `partition` option), never from the model: the
 * tools' schemas are semmem's own declarations (`semmem declare`, bundled at build time, or the
 * server's after `client.loadTools()`), which take no partition. Make one `semmemMemory` per
 * conversation: its tools carry the cursor of its latest recall (the contract: the tools of a
 * model response share that response's recall's cursor).
 */

import { jsonSchema, tool, type LanguageModelMiddleware, type ToolSet } from "ai";
import { DEFAULT_MAX_BYTES, type SemmemClient } from "./client.js";
import { SemmemError } from "./errors.js";
import type { ToolDeclaration } from "./tools.js";
import type { JsonObject, Recall } from "./wire.js";

export interface SemmemMemoryOptions {
  client: SemmemClient;
  /** Whose memory: chosen by the application (a user, a tenant), never by the model. */
  partition: string;
  /** The recalled text's budget in UTF-8 bytes (1–16,384; default 8,192). */
  maxBytes?: number;
  /** Opt-in: ingest each finished turn (the user's latest text and the model's answer) into
   * this conversation session (`POST /ingest`). */
  ingest?: { sessionId: string };
  /** What introduces the recalled lines in the system prompt. */
  heading?: string;
  /** The tools to give the model (default: `client.tools`). */
  tools?: readonly ToolDeclaration[];
  /** Told when a turn's ingestion fails (the answer is returned anyway); default: a warning
   * naming the error's class and code. */
  onIngestError?: (error: unknown) => void;
}

export interface SemmemMemory {
  middleware: LanguageModelMiddleware;
  tools: ToolSet;
  /** The latest recall (`undefined` before the first model call). */
  readonly recalled: Recall | undefined;
}

export const DEFAULT_HEADING = "Relevant facts remembered from earlier conversations (numbered; the memory tools take these numbers):";

type Prompt = Parameters<NonNullable<LanguageModelMiddleware["transformParams"]>>[0]["params"]["prompt"];

/** The text of the latest user message of a prompt, `null` when it has none. */
export function latestUserText(prompt: Prompt): string | null {
  for (let i = prompt.length - 1; i >= 0; i -= 1) {
    const message = prompt[i]!;
    if (message.role !== "user") continue;
    const text = message.content.flatMap((part) => (part.type === "text" ? [part.text] : [])).join("\n");
    return text.trim() ? text : null;
  }
  return null;
}

function withMemory(prompt: Prompt, block: string): Prompt {
  const first = prompt[0];
  if (first?.role === "system") return [{ ...first, content: `${first.content}\n\n${block}` }, ...prompt.slice(1)];
  return [{ role: "system", content: block }, ...prompt];
}

function warn(error: unknown): void {
  const code = error instanceof SemmemError ? ` (${error.code})` : "";
  console.warn(`semmem: the turn was not ingested: ${error instanceof Error ? error.name : "error"}${code}`);
}

/** The middleware and the tools of one conversation's memory. */
export function semmemMemory(options: SemmemMemoryOptions): SemmemMemory {
  const { client, partition } = options;
  const maxBytes = options.maxBytes ?? DEFAULT_MAX_BYTES;
  const heading = options.heading ?? DEFAULT_HEADING;
  const onIngestError = options.onIngestError ?? warn;
  const state: { recalled: Recall | undefined; userText: string | null } = { recalled: undefined, userText: null };

  async function ingest(answer: string): Promise<void> {
    if (!options.ingest) return;
    const messages = [];
    if (state.userText) messages.push({ role: "user", content: state.userText });
    if (answer.trim()) messages.push({ role: "assistant", content: answer });
    if (messages.length === 0) return;
    try {
      await client.ingest(partition, options.ingest.sessionId, messages);
    } catch (error) {
      onIngestError(error);
    }
  }

  const middleware: LanguageModelMiddleware = {
    specificationVersion: "v4",
    async transformParams({ params }) {
      state.userText = latestUserText(params.prompt);
      const recalled = await client.recall(partition, state.userText, maxBytes,
        params.abortSignal ? { signal: params.abortSignal } : {});
      state.recalled = recalled;
      return recalled.text ? { ...params, prompt: withMemory(params.prompt, `${heading}\n${recalled.text}`) } : params;
    },
    async wrapGenerate({ doGenerate }) {
      const result = await doGenerate();
      if (options.ingest && result.finishReason.unified !== "tool-calls") {
        await ingest(result.content.flatMap((part) => (part.type === "text" ? [part.text] : [])).join(""));
      }
      return result;
    },
    async wrapStream({ doStream }) {
      const result = await doStream();
      if (!options.ingest) return result;
      let text = "";
      let finished = false;
      const stream = result.stream.pipeThrough(new TransformStream({
        transform(part, controller) {
          if (part.type === "text-delta") text += part.delta;
          if (part.type === "finish") finished = part.finishReason.unified !== "tool-calls";
          controller.enqueue(part);
        },
        async flush() {
          if (finished) await ingest(text);
        },
      }));
      return { ...result, stream };
    },
  };

  const tools: ToolSet = {};
  for (const declared of options.tools ?? client.tools) {
    tools[`memory_${declared.name}`] = tool({
      description: declared.description,
      inputSchema: jsonSchema<JsonObject>(declared.input as Parameters<typeof jsonSchema>[0]),
      async execute(args: JsonObject, { abortSignal }) {
        try {
          return await client.tool(partition, declared.name, args, {
            cursor: state.recalled?.cursor ?? null, ...(abortSignal ? { signal: abortSignal } : {}),
          }) as JsonObject;
        } catch (error) {
          // A refusal reaches the model as the contract's envelope (a conflict: recall again).
          if (error instanceof SemmemError) {
            return { error: { code: error.code, message: error.message, details: error.details as JsonObject } };
          }
          throw error;
        }
      },
    });
  }

  return { middleware, tools, get recalled() { return state.recalled; } };
}
