/**
 * `SemmemClient`: the host's side of the HTTP memory provider contract (recall and the memory
 * tools), the application doors (`POST /ingest`, `POST /store`) and the owner's calls (the
 * admin API), over the platform's `fetch`. Semantics as the Python client (`semmem_client`):
 * one operation id per logical call, a `deadlineAt` the call's timeout ahead, and the
 * contract's retries with the same bytes.
 */

import { ProtocolError, SemmemError, TransportError } from "./errors.js";
import { Attempts, CONTRACT_RETRY, type RetryPolicy } from "./retry.js";
import { DECLARED_TOOLS } from "./declaration.js";
import { toolsFromOpenApi, type ToolDeclaration } from "./tools.js";
import {
  type Access, type Forgotten, type IngestResult, type Item, type Json, type JsonObject,
  type Message, type Recall, type SearchResult, type SessionSummary, type WriteResult,
  PROTOCOL_VERSION, deadlineAt, encode, envelope, messagesOf, operationId, readAnswer,
  readIngest, readLines, readRecall, readResult, readStore,
} from "./wire.js";

export const DEFAULT_TIMEOUT_MS = 10_000;
/** Ingestion and store batches embed their texts before answering: longer than a recall. */
export const DEFAULT_INGEST_TIMEOUT_MS = 120_000;
export const DEFAULT_MAX_BYTES = 8192;

export interface ClientOptions {
  /** The server, e.g. `http://127.0.0.1:8080` (default: `SEMMEM_URL`). */
  url?: string;
  /** A provider token (default: `SEMMEM_TOKEN`); none for a server run `--insecure`. */
  token?: string;
  /** An admin token for the owner's calls (default: `SEMMEM_ADMIN_TOKEN`). */
  adminToken?: string;
  /** The provider endpoint's path (the server's `SEMMEM_PATH`), default `/memory`. */
  memoryPath?: string;
  /** The binding's access, sent in every envelope. */
  access?: Access;
  /** The default deadline of a provider call across all its attempts (10 s, the contract's). */
  timeoutMs?: number;
  retry?: RetryPolicy;
  /** A `fetch` to use instead of the global one. */
  fetch?: typeof fetch;
}

/** Per call: its operation id (a retry of your own with the same id replays a write), its
 * deadline, and a signal that cancels it (a cancelled write may still have committed). */
export interface CallOptions {
  operationId?: string;
  timeoutMs?: number;
  signal?: AbortSignal;
}

export interface ToolOptions extends CallOptions {
  cursor?: string | null;
  /** Whether the tool is a write the server deduplicates (retried) — by default from the
   * tool's declaration; a write that is not is never retried and answers `{status:
   * "uncertain"}` when its transport fails. */
  idempotent?: boolean;
}

interface Call {
  method: string;
  path: string;
  query?: Record<string, string | number>;
  body?: Uint8Array<ArrayBuffer>;
  headers: Record<string, string>;
  deadlineMs: number;
  read: (status: number, content: Uint8Array) => unknown;
  /** false: a write the server does not deduplicate (no retry; transport failure → uncertain). */
  retried: boolean;
  signal?: AbortSignal | undefined;
}

function env(name: string): string | undefined {
  const value = typeof process === "undefined" ? undefined : process.env[name];
  return value === "" ? undefined : value;
}

function checkTimeout(ms: number): number {
  if (typeof ms !== "number" || !Number.isFinite(ms) || ms <= 0) {
    throw new RangeError("a deadline (timeoutMs) must be a positive number of milliseconds");
  }
  return ms;
}

function sleep(ms: number, signal: AbortSignal | undefined): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason);
    const onAbort = (): void => { clearTimeout(timer); reject(signal!.reason); };
    const timer = setTimeout(() => { signal?.removeEventListener("abort", onAbort); resolve(); }, ms);
    signal?.addEventListener("abort", onAbort, { once: true });
  });
}

function describe(error: unknown): string {
  // The failure's name and code (ECONNREFUSED, UND_ERR_SOCKET…), never a header or body.
  const cause = (error as { cause?: { code?: unknown; name?: unknown } }).cause;
  const code = typeof cause?.code === "string" ? cause.code : typeof cause?.name === "string" ? cause.name : undefined;
  const name = error instanceof Error ? error.name : "Error";
  return code ? `${name} (${code})` : name;
}

export class SemmemClient {
  readonly url: string;
  readonly memoryPath: string;
  readonly access: Access;
  readonly timeoutMs: number;
  readonly retry: RetryPolicy;
  // Private fields: neither `console.log(client)` nor JSON shows a token.
  readonly #headers: Record<string, string>;
  readonly #adminHeaders: Record<string, string> | undefined;
  readonly #fetch: typeof fetch;
  #tools: readonly ToolDeclaration[] = DECLARED_TOOLS;

  constructor(options: ClientOptions = {}) {
    const url = options.url ?? env("SEMMEM_URL");
    if (!url) throw new TypeError("no server URL: pass url or set SEMMEM_URL");
    let parsed: URL;
    try { parsed = new URL(url); } catch { throw new TypeError("url must be absolute, starting http:// or https://"); }
    if (parsed.protocol !== "http:" && parsed.protocol !== "https:") throw new TypeError("url must start http:// or https://");
    if (parsed.search || parsed.hash) throw new TypeError("url must not carry a query or fragment");
    const memoryPath = options.memoryPath ?? "/memory";
    if (!memoryPath.startsWith("/")) throw new TypeError("memoryPath must start with '/'");
    this.url = url.replace(/\/+$/, "");
    this.memoryPath = memoryPath;
    this.access = options.access ?? "read-write";
    this.timeoutMs = checkTimeout(options.timeoutMs ?? DEFAULT_TIMEOUT_MS);
    this.retry = options.retry ?? CONTRACT_RETRY;
    this.#fetch = options.fetch ?? globalThis.fetch.bind(globalThis);
    const token = options.token ?? env("SEMMEM_TOKEN");
    this.#headers = { "Content-Type": "application/json", Accept: "application/json" };
    if (token) this.#headers["Authorization"] = `Bearer ${token}`;
    const admin = options.adminToken ?? env("SEMMEM_ADMIN_TOKEN");
    this.#adminHeaders = admin ? { Accept: "application/json", Authorization: `Bearer ${admin}` } : undefined;
  }

  // ----- the provider contract --------------------------------------------------------------
  /** The facts relevant to `text` within `maxBytes` (newest first for `null`). */
  async recall(partition: string, text: string | null, maxBytes: number = DEFAULT_MAX_BYTES,
               options: CallOptions = {}): Promise<Recall> {
    const deadlineMs = this.#deadline(options.timeoutMs);
    const body = envelope("recall", options.operationId, partition, this.access, deadlineMs,
      { input: { text }, maxBytes });
    return this.#send(this.#provider(body, deadlineMs, true, options.signal, readRecall)) as Promise<Recall>;
  }

  /** Call a declared tool by name; its `result` as the server answered it. */
  async tool(partition: string, name: string, args: JsonObject, options: ToolOptions = {}): Promise<unknown> {
    const declared = this.#tools.find((t) => t.name === name);
    const idempotent = options.idempotent ?? (declared ? declared.access === "read" || declared.idempotent : false);
    const deadlineMs = this.#deadline(options.timeoutMs);
    const fields: JsonObject = { tool: name, arguments: args };
    if (options.cursor !== undefined && options.cursor !== null) fields["cursor"] = options.cursor;
    const body = envelope("tool", options.operationId, partition, this.access, deadlineMs, fields);
    return this.#send(this.#provider(body, deadlineMs, idempotent, options.signal, readResult));
  }

  /** The facts closest to `query`, with numbers and scores. */
  search(partition: string, query: string, options: ToolOptions & { limit?: number; filter?: JsonObject } = {}): Promise<SearchResult> {
    const args: JsonObject = { query, limit: options.limit ?? 10 };
    if (options.filter) args["filter"] = options.filter;
    return this.tool(partition, "search", args, options) as Promise<SearchResult>;
  }

  /** Store a fact; the result has its number `n` and maybe `similar` facts. */
  remember(partition: string, text: string, options: ToolOptions & { metadata?: JsonObject } = {}): Promise<WriteResult> {
    const args: JsonObject = { text };
    if (options.metadata) args["metadata"] = options.metadata;
    return this.tool(partition, "remember", args, options) as Promise<WriteResult>;
  }

  /** Replace fact `n`'s text; `Conflict` if it changed after the cursor's recall. */
  update(partition: string, n: number, text: string, options: ToolOptions & { metadata?: JsonObject } = {}): Promise<WriteResult> {
    const args: JsonObject = { n, text };
    if (options.metadata) args["metadata"] = options.metadata;
    return this.tool(partition, "update", args, options) as Promise<WriteResult>;
  }

  /** Forget fact `n` (durably); `Conflict` if it changed after the cursor's recall. */
  forget(partition: string, n: number, options: ToolOptions = {}): Promise<WriteResult> {
    return this.tool(partition, "forget", { n }, options) as Promise<WriteResult>;
  }

  /** The tools this client knows: the bundled declaration (`semmem declare`), or the server's
   * own after `loadTools()`. */
  get tools(): readonly ToolDeclaration[] { return this.#tools; }

  /** Read the server's tool declarations (`GET /openapi.json`, no token) and use them from now
   * on: descriptions as this server's settings give them (`accepted`, metadata, filters). */
  async loadTools(options: CallOptions = {}): Promise<readonly ToolDeclaration[]> {
    const doc = await this.#send({ method: "GET", path: "/openapi.json", headers: { Accept: "application/json" },
      deadlineMs: this.#deadline(options.timeoutMs), read: (s, c) => readAnswer(s, c, null), retried: true,
      signal: options.signal });
    this.#tools = toolsFromOpenApi(doc, this.memoryPath);
    return this.#tools;
  }

  // ----- the application doors --------------------------------------------------------------
  /** Store a session's messages as pieces (`POST /ingest`): appended to the session, a message
   * it already holds never stored twice; retried with the same operation id (a lost reply
   * replays). Default deadline 120 s (every new piece is embedded first). */
  ingest(partition: string, sessionId: string, messages: Iterable<Message>, options: CallOptions = {}): Promise<IngestResult> {
    const deadlineMs = checkTimeout(options.timeoutMs ?? DEFAULT_INGEST_TIMEOUT_MS);
    const body = {
      version: PROTOCOL_VERSION, operationId: options.operationId ?? operationId(), partition,
      sessionId, messages: messagesOf(messages), deadlineAt: deadlineAt(deadlineMs),
    };
    return this.#send({ method: "POST", path: "/ingest", body: encode(body), headers: this.#headers, deadlineMs,
      read: (s, c) => readIngest(readAnswer(s, c, null)), retried: true, signal: options.signal }) as Promise<IngestResult>;
  }

  /** Run a batch of store operations (`POST /store`), in order; one result each. Retried as a
   * whole (puts set a value, deletes remove it: both safe to repeat). */
  store(ops: readonly JsonObject[], options: Omit<CallOptions, "operationId"> = {}): Promise<Json[]> {
    const deadlineMs = checkTimeout(options.timeoutMs ?? DEFAULT_INGEST_TIMEOUT_MS);
    return this.#send({ method: "POST", path: "/store", body: encode({ ops }), headers: this.#headers, deadlineMs,
      read: (s, c) => readStore(readAnswer(s, c, null), ops.length), retried: true, signal: options.signal }) as Promise<Json[]>;
  }

  // ----- the owner's calls (admin API, admin token) -----------------------------------------
  /** Every live fact of a partition with its record fields, as `semmem export` writes them. */
  export(partition: string, options: CallOptions = {}): Promise<Item[]> {
    return this.#admin("GET", "/export", { partition }, options, readLines) as Promise<Item[]>;
  }

  /** Delete a partition and every file of it; `false` if it did not exist. */
  async deletePartition(partition: string, options: CallOptions = {}): Promise<boolean> {
    const answer = await this.#admin("DELETE", "/partitions", { partition }, options) as { deleted: boolean };
    return answer.deleted === true;
  }

  /** One page of the partition names, sorted. */
  partitions(offset = 0, limit = 100, options: CallOptions = {}): Promise<{ partitions: string[]; total: number; next: number | null }> {
    return this.#admin("GET", "/partitions", { offset, limit }, options) as Promise<{ partitions: string[]; total: number; next: number | null }>;
  }

  /** A partition's sessions, the latest said first. */
  async sessions(partition: string, options: CallOptions = {}): Promise<SessionSummary[]> {
    return (await this.#admin("GET", "/sessions", { partition }, options) as { sessions: SessionSummary[] }).sessions;
  }

  /** One session's messages in order, each with its pieces. */
  async session(partition: string, sessionId: string, options: CallOptions = {}): Promise<JsonObject> {
    return (await this.#admin("GET", "/session", { partition, session: sessionId }, options) as { session: JsonObject }).session;
  }

  /** Forget a session whole, durably; `NotFound` if it has no pieces. */
  forgetSession(partition: string, sessionId: string, options: CallOptions = {}): Promise<Forgotten> {
    return this.#admin("DELETE", "/session", { partition, session: sessionId }, options) as Promise<Forgotten>;
  }

  /** The retention policy: the default and overrides, or one partition's (with its due facts). */
  retention(partition?: string, options: CallOptions = {}): Promise<JsonObject> {
    return this.#admin("GET", "/retention", partition === undefined ? {} : { partition }, options) as Promise<JsonObject>;
  }

  /** Set a partition's retention (`30d`, `12h`, `never`, `inherit`); facts now past it are
   * forgotten at once (`expired`). */
  setRetention(partition: string, policy: string, options: CallOptions = {}): Promise<JsonObject> {
    return this.#admin("PUT", "/retention", { partition, policy }, options) as Promise<JsonObject>;
  }

  // ----- sending ----------------------------------------------------------------------------
  #deadline(timeoutMs: number | undefined): number {
    return timeoutMs === undefined ? this.timeoutMs : checkTimeout(timeoutMs);
  }

  #provider(body: JsonObject, deadlineMs: number, retried: boolean, signal: AbortSignal | undefined,
            read: (body: unknown) => unknown): Call {
    return { method: "POST", path: this.memoryPath, body: encode(body), headers: this.#headers, deadlineMs,
      read: (status, content) => read(readAnswer(status, content)), retried, signal };
  }

  #admin(method: string, path: string, query: Record<string, string | number>, options: CallOptions,
         read: (status: number, content: Uint8Array) => unknown = (s, c) => readAnswer(s, c, null)): Promise<unknown> {
    if (!this.#adminHeaders) throw new TypeError(`${method} /admin${path} is the admin API: pass adminToken or set SEMMEM_ADMIN_TOKEN`);
    return this.#send({ method, path: "/admin" + path, query, headers: this.#adminHeaders,
      deadlineMs: this.#deadline(options.timeoutMs), read, retried: true, signal: options.signal });
  }

  async #send(call: Call): Promise<unknown> {
    const attempts = new Attempts(call.deadlineMs, call.retried ? this.retry : { delaysMs: [], retryAfter: false });
    const url = new URL(this.url + call.path);
    for (const [k, v] of Object.entries(call.query ?? {})) url.searchParams.set(k, String(v));
    let last: SemmemError | undefined;
    for (;;) {
      if (call.signal?.aborted) throw call.signal.reason;
      const left = attempts.timeout(last);
      const timer = AbortSignal.timeout(Math.max(1, Math.ceil(left)));
      const signal = call.signal ? AbortSignal.any([timer, call.signal]) : timer;
      let status: number;
      let content: Uint8Array;
      let retryAfter: string | null = null;
      try {
        const init: RequestInit = { method: call.method, headers: call.headers, signal, redirect: "manual" };
        if (call.body) init.body = call.body;
        const response = await this.#fetch(url, init);
        status = response.status;
        retryAfter = response.headers.get("Retry-After");
        content = new Uint8Array(await response.arrayBuffer());
      } catch (error) {
        if (call.signal?.aborted) throw call.signal.reason;
        // No answer: the contract's "uncertain" for a write the server does not deduplicate.
        if (!call.retried) return { status: "uncertain" };
        last = new TransportError(`no answer: ${timer.aborted ? "the attempt's deadline passed" : describe(error)}`);
        await sleep(attempts.after(last), call.signal);
        continue;
      }
      try {
        return call.read(status, content);
      } catch (error) {
        if (!(error instanceof SemmemError)) throw new ProtocolError(`unreadable answer: ${(error as Error).name}`, { status });
        last = error;
        await sleep(attempts.after(error, retryAfter), call.signal);
      }
    }
  }

  toString(): string {
    return `SemmemClient(${this.url}${this.memoryPath}, access=${this.access})`;
  }

  [Symbol.for("nodejs.util.inspect.custom")](): string {
    return this.toString();
  }

  /** One model request: its recall and the tool calls that follow it, each carrying its cursor. */
  async turn(partition: string, text: string | null, maxBytes: number = DEFAULT_MAX_BYTES, options: CallOptions = {}): Promise<Turn> {
    return new Turn(this, partition, await this.recall(partition, text, maxBytes, options));
  }
}

/** One model request: its recall (`text`, `sources`, `cursor`) and the tool calls that follow
 * it, each carrying that cursor (the contract: tools of one response share it). */
export class Turn {
  constructor(readonly client: SemmemClient, readonly partition: string, readonly recalled: Recall) {}
  get text(): string { return this.recalled.text; }
  get cursor(): string | null { return this.recalled.cursor; }
  search(query: string, options: { limit?: number; filter?: JsonObject } & CallOptions = {}): Promise<SearchResult> {
    return this.client.search(this.partition, query, { ...options, cursor: this.cursor });
  }
  remember(text: string, options: { metadata?: JsonObject } & CallOptions = {}): Promise<WriteResult> {
    return this.client.remember(this.partition, text, { ...options, cursor: this.cursor });
  }
  update(n: number, text: string, options: { metadata?: JsonObject } & CallOptions = {}): Promise<WriteResult> {
    return this.client.update(this.partition, n, text, { ...options, cursor: this.cursor });
  }
  forget(n: number, options: CallOptions = {}): Promise<WriteResult> {
    return this.client.forget(this.partition, n, { ...options, cursor: this.cursor });
  }
}
