/**
 * `SemmemClient`: the host's side of the HTTP memory provider contract (recall and the memory
 * tools), the application doors (`POST /ingest`, `POST /store`) and the owner's calls (the
 * admin API), over the platform's `fetch`. Semantics as the Python client (`semmem_client`):
 * one operation id per logical call, a `deadlineAt` the call's timeout ahead, and the
 * contract's retries with the same bytes.
 */

import { CONTRACT_RETRY, type RetryPolicy } from "./retry.js";
import { send, type Call } from "./send.js";
import { DECLARED_TOOLS } from "./declaration.js";
import { toolsFromOpenApi, type ToolDeclaration } from "./tools.js";
import {
  type Access, type Forgotten, type IngestResult, type Item, type Json, type JsonObject,
  type Message, type Recall, type SearchResult, type SessionSummary, type WriteResult,
  MAX_BODY_BYTES, PROTOCOL_VERSION, deadlineAt, encode, envelope, messagesOf, operationId, readAnswer,
  readIngest, readFacts, readRecall, readResult, readStore,
} from "./wire.js";

export const DEFAULT_TIMEOUT_MS = 10_000;
/** Ingestion and store batches embed their texts before answering: longer than a recall. */
export const DEFAULT_INGEST_TIMEOUT_MS = 120_000;
export const DEFAULT_MAX_BYTES = 8192;
/** The most bytes of an ingest, store or admin answer read (a provider answer: the contract's
 * 64 KiB); past it the answer is refused as it streams in. */
export const MAX_DOOR_ANSWER_BYTES = 64 * 1024 * 1024;

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
  /** The default deadline of every call across all its attempts (10 s, the contract's): store
   * reads too; `ingest` and store batches that put take `writeTimeoutMs`. */
  timeoutMs?: number;
  /** The default deadline of `ingest` and of a store batch that puts (they embed first):
   * 120 s, or `timeoutMs` when only that was given. */
  writeTimeoutMs?: number;
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

function env(name: string): string | undefined {
  const value = typeof process === "undefined" ? undefined : process.env[name];
  return value === "" ? undefined : value;
}

/** A token as a header carries it: visible ASCII (what fetch would refuse is refused here, by
 * name, never echoed). */
function checkToken(token: string | undefined, what: string): string | undefined {
  if (token !== undefined && !/^[\x21-\x7e]+$/.test(token)) {
    throw new TypeError(`${what} must be visible ASCII characters (no spaces, line breaks or other characters)`);
  }
  return token;
}

function checkTimeout(ms: number): number {
  if (typeof ms !== "number" || !Number.isFinite(ms) || ms <= 0) {
    throw new RangeError("a deadline (timeoutMs) must be a positive number of milliseconds");
  }
  return ms;
}

export class SemmemClient {
  readonly url: string;
  readonly memoryPath: string;
  readonly access: Access;
  readonly timeoutMs: number;
  /** The default deadline of `ingest` and of store batches that put (see `ClientOptions`). */
  readonly writeTimeoutMs: number;
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
    // fetch refuses such a URL; and a password kept in `url` would be printed with the client.
    if (parsed.username || parsed.password) throw new TypeError("url must not carry credentials (user:password@): give the token as `token`");
    const memoryPath = options.memoryPath ?? "/memory";
    if (!memoryPath.startsWith("/")) throw new TypeError("memoryPath must start with '/'");
    this.url = url.replace(/\/+$/, "");
    this.memoryPath = memoryPath;
    this.access = options.access ?? "read-write";
    this.timeoutMs = checkTimeout(options.timeoutMs ?? DEFAULT_TIMEOUT_MS);
    this.writeTimeoutMs = checkTimeout(options.writeTimeoutMs ?? options.timeoutMs ?? DEFAULT_INGEST_TIMEOUT_MS);
    this.retry = options.retry ?? CONTRACT_RETRY;
    this.#fetch = options.fetch ?? globalThis.fetch.bind(globalThis);
    const token = checkToken(options.token ?? env("SEMMEM_TOKEN"), "token");
    this.#headers = { "Content-Type": "application/json", Accept: "application/json" };
    if (token) this.#headers["Authorization"] = `Bearer ${token}`;
    const admin = checkToken(options.adminToken ?? env("SEMMEM_ADMIN_TOKEN"), "adminToken");
    this.#adminHeaders = admin ? { Accept: "application/json", Authorization: `Bearer ${admin}` } : undefined;
  }

  // ----- the provider contract --------------------------------------------------------------
  /** The facts relevant to `text` within `maxBytes` (newest first for `null`). */
  async recall(partition: string, text: string | null, maxBytes: number = DEFAULT_MAX_BYTES,
               options: CallOptions = {}): Promise<Recall> {
    const deadlineMs = this.#deadline(options.timeoutMs);
    const body = envelope("recall", options.operationId, partition, this.access, deadlineMs,
      { input: { text }, maxBytes });
    return this.#send(this.#provider(body, deadlineMs, "always", false, options.signal, readRecall)) as Promise<Recall>;
  }

  /** Call a declared tool by name; its `result` as the server answered it. */
  async tool(partition: string, name: string, args: JsonObject, options: ToolOptions = {}): Promise<unknown> {
    const declared = this.#tools.find((t) => t.name === name);
    const idempotent = options.idempotent ?? (declared ? declared.access === "read" || declared.idempotent : false);
    const deadlineMs = this.#deadline(options.timeoutMs);
    const fields: JsonObject = { tool: name, arguments: args };
    if (options.cursor !== undefined && options.cursor !== null) fields["cursor"] = options.cursor;
    const body = envelope("tool", options.operationId, partition, this.access, deadlineMs, fields);
    const write = declared?.access !== "read";
    return this.#send(this.#provider(body, deadlineMs, idempotent ? "always" : "never", write, options.signal, readResult));
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
      deadlineMs: this.#deadline(options.timeoutMs), read: (s, c) => readAnswer(s, c, null), retry: "always",
      write: false, limit: MAX_DOOR_ANSWER_BYTES, signal: options.signal });
    this.#tools = toolsFromOpenApi(doc, this.memoryPath);
    return this.#tools;
  }

  // ----- the application doors --------------------------------------------------------------
  /** Store a session's messages as pieces (`POST /ingest`): appended to the session, a message
   * it already holds never stored twice; retried with the same operation id (a lost reply
   * replays). Default deadline `writeTimeoutMs` (120 s unless `timeoutMs` was given: every
   * new piece is embedded first). A failure after a lost reply is `uncertain` and carries the
   * operation id to replay. */
  ingest(partition: string, sessionId: string, messages: Iterable<Message>, options: CallOptions = {}): Promise<IngestResult> {
    const deadlineMs = checkTimeout(options.timeoutMs ?? this.writeTimeoutMs);
    const id = options.operationId ?? operationId();
    const body = {
      version: PROTOCOL_VERSION, operationId: id, partition,
      sessionId, messages: messagesOf(messages), deadlineAt: deadlineAt(deadlineMs),
    };
    return this.#send({ method: "POST", path: "/ingest", body: encode(body), headers: this.#headers, deadlineMs,
      read: (s, c) => readIngest(readAnswer(s, c, null)), retry: "always", write: true, operationId: id,
      limit: MAX_DOOR_ANSWER_BYTES, signal: options.signal }) as Promise<IngestResult>;
  }

  /** Run a batch of store operations (`POST /store`), in order; one result each. The server
   * keeps no operation id for a batch, so one that puts or deletes is retried only when it
   * surely did not run (connection refused, 408, 429); once sent, a lost reply ends the call
   * with an `uncertain` error (a repeat could undo another client's write made in between).
   * A batch of reads only is retried as any read. Default deadline: `timeoutMs` for a batch of
   * reads only, `writeTimeoutMs` for one that puts or deletes. */
  store(ops: readonly JsonObject[], options: Omit<CallOptions, "operationId"> = {}): Promise<Json[]> {
    const write = ops.some((op) => op["op"] === "put");
    const deadlineMs = checkTimeout(options.timeoutMs ?? (write ? this.writeTimeoutMs : this.timeoutMs));
    return this.#send({ method: "POST", path: "/store", body: encode({ ops }), headers: this.#headers, deadlineMs,
      read: (s, c) => readStore(readAnswer(s, c, null), ops.length), retry: write ? "unsent" : "always", write,
      limit: MAX_DOOR_ANSWER_BYTES, signal: options.signal }) as Promise<Json[]>;
  }

  // ----- the owner's calls (admin API, admin token) -----------------------------------------
  /** Every live fact of a partition with its record fields, as `semmem export` writes them. */
  export(partition: string, options: CallOptions = {}): Promise<Item[]> {
    return this.#admin("GET", "/export", { partition }, options, readFacts, null) as Promise<Item[]>;
  }

  /** Delete a partition and every file of it; `false` if it did not exist. Not retried once
   * sent (a repeat would answer `false` for the partition the first attempt deleted): a lost
   * reply ends in an `uncertain` error. */
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

  /** Forget a session whole, durably; `NotFound` if it has no pieces. Not retried once sent
   * (a lost reply: an `uncertain` error, never a repeat's `NotFound`). */
  forgetSession(partition: string, sessionId: string, options: CallOptions = {}): Promise<Forgotten> {
    return this.#admin("DELETE", "/session", { partition, session: sessionId }, options) as Promise<Forgotten>;
  }

  /** The retention policy: the default and overrides, or one partition's (with its due facts). */
  retention(partition?: string, options: CallOptions = {}): Promise<JsonObject> {
    return this.#admin("GET", "/retention", partition === undefined ? {} : { partition }, options) as Promise<JsonObject>;
  }

  /** Set a partition's retention (`30d`, `12h`, `never`, `inherit`); facts now past it are
   * forgotten at once (`expired`). Not retried once sent (a lost reply: an `uncertain` error,
   * never a repeat's empty `expired`). */
  setRetention(partition: string, policy: string, options: CallOptions = {}): Promise<JsonObject> {
    return this.#admin("PUT", "/retention", { partition, policy }, options) as Promise<JsonObject>;
  }

  // ----- sending ----------------------------------------------------------------------------
  #deadline(timeoutMs: number | undefined): number {
    return timeoutMs === undefined ? this.timeoutMs : checkTimeout(timeoutMs);
  }

  #provider(body: JsonObject, deadlineMs: number, retry: Call["retry"], write: boolean, signal: AbortSignal | undefined,
            read: (body: unknown) => unknown): Call {
    return { method: "POST", path: this.memoryPath, body: encode(body), headers: this.#headers, deadlineMs,
      read: (status, content) => read(readAnswer(status, content)), retry, write,
      operationId: body["operationId"] as string, limit: MAX_BODY_BYTES, signal };
  }

  #admin(method: string, path: string, query: Record<string, string | number>, options: CallOptions,
         read: (status: number, content: Uint8Array) => unknown = (s, c) => readAnswer(s, c, null),
         limit: number | null = MAX_DOOR_ANSWER_BYTES): Promise<unknown> {
    if (!this.#adminHeaders) throw new TypeError(`${method} /admin${path} is the admin API: pass adminToken or set SEMMEM_ADMIN_TOKEN`);
    const write = method !== "GET";
    return this.#send({ method, path: "/admin" + path, query, headers: this.#adminHeaders,
      deadlineMs: this.#deadline(options.timeoutMs), read, retry: write ? "unsent" : "always", write, limit,
      signal: options.signal });
  }

  #send(call: Call): Promise<unknown> {
    const url = new URL(this.url + call.path);
    for (const [k, v] of Object.entries(call.query ?? {})) url.searchParams.set(k, String(v));
    return send(call, url, this.retry, this.#fetch);
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
