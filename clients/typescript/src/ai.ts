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
import { recallText, type JsonObject, type Recall } from "./wire.js";

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
  /** Told when memory could not be consulted (`"recall"`: the model is called without recalled
   * lines) or a turn was not ingested (`"ingest"`: the answer is returned anyway). A turn never
   * fails because of memory. Default: a `console.warn` naming the phase, the error's class and
   * code (never a token or a text). */
  onError?: (error: unknown, phase: "recall" | "ingest") => void;
  /** Told instead of `onError` when a turn's ingestion fails (kept for earlier code). */
  onIngestError?: (error: unknown) => void;
  /** The recall's deadline (default: the client's `timeoutMs`, 10 s): past it, no memory. */
  recallTimeoutMs?: number;
  /** The ingestion's deadline (default 30 s). Ingestion runs in the background once the answer
   * is complete: it never holds the answer back; the call's `abortSignal` stops it. */
  ingestTimeoutMs?: number;
}

export interface SemmemMemory {
  middleware: LanguageModelMiddleware;
  tools: ToolSet;
  /** The latest recall (`undefined` before the first model call, or when it failed). */
  readonly recalled: Recall | undefined;
  /** Settles when every ingestion started so far has ended (stored or reported to `onError`):
   * await it before a short-lived process exits. */
  settled(): Promise<void>;
}

export const DEFAULT_INGEST_TIMEOUT_MS = 30_000;

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

function warn(error: unknown, phase: "recall" | "ingest"): void {
  const code = error instanceof SemmemError ? ` (${error.code})` : "";
  const what = phase === "recall" ? "no memory for this model call: recall failed" : "the turn was not ingested";
  console.warn(`semmem: ${what}: ${error instanceof Error ? error.name : "error"}${code}`);
}

function signalOf(signal: AbortSignal | undefined): { signal?: AbortSignal } {
  return signal ? { signal } : {};
}

/** The middleware and the tools of one conversation's memory. */
export function semmemMemory(options: SemmemMemoryOptions): SemmemMemory {
  const { client, partition } = options;
  const maxBytes = options.maxBytes ?? DEFAULT_MAX_BYTES;
  const heading = options.heading ?? DEFAULT_HEADING;
  const onError = options.onError ?? warn;
  const report = (error: unknown, phase: "recall" | "ingest"): void => {
    try {
      if (phase === "ingest" && options.onIngestError) options.onIngestError(error);
      else onError(error, phase);
    } catch { /* a hook's own failure never fails a turn */ }
  };
  const state: { recalled: Recall | undefined; userText: string | null } = { recalled: undefined, userText: null };
  const pending = new Set<Promise<void>>();

  /** Ingest the finished turn in the background (never awaited by the answer). */
  function ingest(answer: string, signal: AbortSignal | undefined): void {
    if (!options.ingest) return;
    const messages = [];
    if (state.userText) messages.push({ role: "user", content: state.userText });
    if (answer.trim()) messages.push({ role: "assistant", content: answer });
    if (messages.length === 0) return;
    const running = client.ingest(partition, options.ingest.sessionId, messages, {
      timeoutMs: options.ingestTimeoutMs ?? DEFAULT_INGEST_TIMEOUT_MS, ...signalOf(signal),
    }).then(() => undefined, (error: unknown) => report(error, "ingest"));
    pending.add(running);
    void running.finally(() => pending.delete(running));
  }

  const middleware: LanguageModelMiddleware = {
    specificationVersion: "v4",
    async transformParams({ params }) {
      state.userText = latestUserText(params.prompt);
      state.recalled = undefined;
      let recalled: Recall;
      try {
        // A message of any length: its start and end, within the contract's body limit.
        const text = state.userText === null ? null : recallText(state.userText);
        recalled = await client.recall(partition, text, maxBytes, {
          ...signalOf(params.abortSignal),
          ...(options.recallTimeoutMs !== undefined ? { timeoutMs: options.recallTimeoutMs } : {}),
        });
      } catch (error) {
        if (params.abortSignal?.aborted) throw error;  // the caller cancelled the call
        report(error, "recall");  // memory could not be consulted: the model is called without it
        return params;
      }
      state.recalled = recalled;
      return recalled.text ? { ...params, prompt: withMemory(params.prompt, `${heading}\n${recalled.text}`) } : params;
    },
    async wrapGenerate({ doGenerate, params }) {
      const result = await doGenerate();
      if (options.ingest && result.finishReason.unified !== "tool-calls") {
        ingest(result.content.flatMap((part) => (part.type === "text" ? [part.text] : [])).join(""), params.abortSignal);
      }
      return result;
    },
    async wrapStream({ doStream, params }) {
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
        flush() {
          if (finished) ingest(text, params.abortSignal);
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

  return {
    middleware, tools,
    get recalled() { return state.recalled; },
    async settled() { while (pending.size > 0) await Promise.all([...pending]); },
  };
}
