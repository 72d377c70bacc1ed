/**
 * One call's attempts over `fetch`: the deadline across them, the retry rule, answers read as
 * they stream in (refused once past their limit, never read whole first), and the outcome of a
 * write the server may have run without its reply reaching us (`uncertain`, with the
 * operation id to replay it).
 *
 * How a call is retried (`Call.retry`):
 * - `"always"`: reads, and writes the server deduplicates by their operation id (`ingest`, the
 *   idempotent tools): every retryable failure, each attempt the same bytes.
 * - `"unsent"`: writes the server does not deduplicate (a store batch with puts or deletes, the
 *   owner's deleting and retention calls): retried only when the server surely did not run them
 *   (the connection was refused; 408, 429: refused at admission). Once a request may have been
 *   run, a failure is final and says the outcome is uncertain.
 * - `"never"`: a tool call the declaration does not mark idempotent (the contract's rule); no
 *   answer gives `{ status: "uncertain" }`.
 */

import { type SemmemErrorOptions, ProtocolError, SemmemError, TransportError } from "./errors.js";
import { Attempts, type RetryPolicy } from "./retry.js";

export interface Call {
  method: string;
  path: string;
  query?: Record<string, string | number>;
  body?: Uint8Array<ArrayBuffer>;
  headers: Record<string, string>;
  deadlineMs: number;
  read: (status: number, content: Uint8Array) => unknown;
  retry: "always" | "unsent" | "never";
  /** Whether the call writes (its failure after a lost reply is `uncertain`). */
  write: boolean;
  /** The operation id a replay of this write takes (named in an uncertain failure). */
  operationId?: string | undefined;
  /** The most bytes of an answer read (`null`: no limit); past it, a `ProtocolError`. */
  limit: number | null;
  signal?: AbortSignal | undefined;
}

/** Failures of a connection that never opened: the request was surely not sent. */
const UNSENT = new Set(["ECONNREFUSED", "ENOTFOUND", "EAI_AGAIN", "EHOSTUNREACH", "ENETUNREACH", "UND_ERR_CONNECT_TIMEOUT"]);
/** Answers of a request the server refused before running it. */
const REFUSED_UNRUN = new Set([408, 429]);
/** An error answer's body is an envelope: never more than this is read of one. */
const ERROR_LIMIT = 64 * 1024;

function sleep(ms: number, signal: AbortSignal | undefined): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason);
    const onAbort = (): void => { clearTimeout(timer); reject(signal!.reason); };
    const timer = setTimeout(() => { signal?.removeEventListener("abort", onAbort); resolve(); }, ms);
    signal?.addEventListener("abort", onAbort, { once: true });
  });
}

function causeCode(error: unknown): string | undefined {
  const cause = (error as { cause?: { code?: unknown; name?: unknown } }).cause;
  return typeof cause?.code === "string" ? cause.code : typeof cause?.name === "string" ? cause.name : undefined;
}

function describe(error: unknown): string {
  // The failure's name and code (ECONNREFUSED, UND_ERR_SOCKET…), never a header or body.
  const code = causeCode(error);
  const name = error instanceof Error ? error.name : "Error";
  return code ? `${name} (${code})` : name;
}

/** The body of an answer, read chunk by chunk and abandoned once over `limit` bytes. */
async function readBody(response: Response, limit: number | null): Promise<Uint8Array> {
  const over = (): ProtocolError => new ProtocolError(`answer over the limit of ${limit} bytes (HTTP ${response.status}); not read further`, { status: response.status });
  const declared = Number(response.headers.get("Content-Length") ?? NaN);
  if (limit !== null && declared > limit) { await response.body?.cancel().catch(() => undefined); throw over(); }
  if (response.body === null) return new Uint8Array();
  const reader = response.body.getReader();
  const chunks: Uint8Array[] = [];
  let total = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    total += value.byteLength;
    if (limit !== null && total > limit) { await reader.cancel().catch(() => undefined); throw over(); }
    chunks.push(value);
  }
  const out = new Uint8Array(total);
  let at = 0;
  for (const chunk of chunks) { out.set(chunk, at); at += chunk.byteLength; }
  return out;
}

/** `error` marked as the failure of a write that may have committed. */
function uncertain(error: SemmemError, call: Call): SemmemError {
  const replay = call.operationId ? `; replay it with operationId ${call.operationId} (the server answers a replay once)` : "; check its effect before trying again";
  const message = `${error.message} — the outcome is uncertain: the write may have committed${replay}`;
  const cls = error.constructor as new (message: string, options: SemmemErrorOptions) => SemmemError;
  return new cls(message, { status: error.status, details: error.details, code: error.code, uncertain: true, operationId: call.operationId });
}

/** Run `call`: its answer as `call.read` reads it, or the error that ended it. */
export async function send(call: Call, url: URL, policy: RetryPolicy, fetcher: typeof fetch): Promise<unknown> {
  const attempts = new Attempts(call.deadlineMs, call.retry === "never" ? { delaysMs: [], retryAfter: false } : policy);
  let last: SemmemError | undefined;
  // An attempt may have run without its answer reaching us (no answer once sent, or a 5xx).
  let lost = false;
  const fail = (error: SemmemError): SemmemError => (call.write && lost ? uncertain(error, call) : error);
  for (;;) {
    if (call.signal?.aborted) throw call.signal.reason;
    let left: number;
    try { left = attempts.timeout(last); } catch (error) { throw fail(error as SemmemError); }
    const timer = AbortSignal.timeout(Math.max(1, Math.ceil(left)));
    const signal = call.signal ? AbortSignal.any([timer, call.signal]) : timer;
    let status: number;
    let content: Uint8Array;
    let retryAfter: string | null = null;
    try {
      const init: RequestInit = { method: call.method, headers: call.headers, signal, redirect: "manual" };
      if (call.body) init.body = call.body;
      const response = await fetcher(url, init);
      status = response.status;
      retryAfter = response.headers.get("Retry-After");
      content = await readBody(response, status === 200 ? call.limit : Math.min(call.limit ?? ERROR_LIMIT, ERROR_LIMIT));
    } catch (error) {
      if (call.signal?.aborted) throw call.signal.reason;
      if (error instanceof ProtocolError) throw fail(error);
      // A TypeError without a network cause is a request fetch refuses to make: not retried.
      if (error instanceof TypeError && (error as { cause?: unknown }).cause === undefined) throw error;
      const unsent = UNSENT.has(causeCode(error) ?? "");
      if (!unsent) lost = true;
      // No answer: the contract's "uncertain" for a write the server does not deduplicate.
      if (call.retry === "never") return { status: "uncertain" };
      last = new TransportError(`no answer: ${timer.aborted ? "the attempt's deadline passed" : describe(error)}`);
      if (call.retry === "unsent" && !unsent) throw fail(last);
      await sleep(after(attempts, last, undefined, fail), call.signal);
      continue;
    }
    if (status >= 500) lost = true;
    try {
      return call.read(status, content);
    } catch (error) {
      if (!(error instanceof SemmemError)) throw new ProtocolError(`unreadable answer: ${(error as Error).name}`, { status });
      last = error;
      if (call.retry === "unsent" && !REFUSED_UNRUN.has(status)) throw fail(error);
      await sleep(after(attempts, error, retryAfter, fail), call.signal);
    }
  }
}

function after(attempts: Attempts, failure: SemmemError, retryAfter: string | null | undefined,
               fail: (error: SemmemError) => SemmemError): number {
  try { return attempts.after(failure, retryAfter); } catch (error) { throw error === failure ? fail(failure) : error; }
}
