/** The contract's v1 bodies as the host sends them, and its answers as this client reads them
 * (the Python client's `_wire.py`, `_ingest.py`). */

import { randomUUID } from "node:crypto";
import { ProtocolError, fromEnvelope } from "./errors.js";

export const PROTOCOL_VERSION = 1;
export const MAX_BODY_BYTES = 64 * 1024;
export type Access = "read" | "read-write";
export type Json = null | boolean | number | string | Json[] | { [key: string]: Json };
export type JsonObject = { [key: string]: Json };

/** One recalled fact: `id` is its number (the wire's string, read as the number that
 * `update` and `forget` take). */
export interface Source { id: number; title?: string; revision?: string; updatedAt?: string }

/** A recall: the text for the instructions, one source per line, the state it read. */
export interface Recall { text: string; sources: Source[]; cursor: string | null }

export interface Similar { n: number; text: string; score: number }

/** What `remember`, `update` and `forget` answer; `uncertain` only for a non-idempotent write
 * whose transport failed (the contract's rule: it may or may not have committed). */
export type WriteResult =
  | { status: "stored" | "accepted"; n: number; count: number; existing?: boolean; forgotten?: boolean; similar?: Similar[] }
  | Uncertain;
export interface Uncertain { status: "uncertain" }

export interface Found {
  n: number; text: string; score: number; updatedAt: string;
  metadata?: Record<string, Json>; sessionId?: string; role?: string; at?: string;
}
export interface SearchResult { items: Found[]; count: number; truncated?: boolean }

/** One message of a conversation (`content` blank or null: a turn with no text, which stores
 * nothing; `at`: ISO 8601 or a Date, absent: when the server receives it). */
export interface Message { role: string; content: string | null; at?: string | Date }
export interface IngestResult { status: "stored" | "accepted"; sessionId: string; items: number[][]; count: number }
export interface SessionSummary { sessionId: string; messages: number; pieces: number; firstAt: string | null; lastAt: string | null }
export interface Forgotten { status: "stored"; forgotten: number[]; count: number; sessionId?: string }

/** A live fact as owners see it (admin API, export). */
export interface Item {
  n: number; text: string; ts: string; updated: string; revision: number;
  [field: string]: Json | undefined;
}

/** A fresh operation id (one per logical call; its retries reuse it). */
export function operationId(): string {
  return `ts-${randomUUID().replaceAll("-", "")}`;
}

/** An ISO 8601 UTC instant `ms` from now, to the millisecond. */
export function deadlineAt(ms: number, now: number = Date.now()): string {
  return new Date(now + ms).toISOString();
}

/** A v1 provider request body. */
export function envelope(operation: "recall" | "tool", opId: string | undefined, partition: string,
                         access: Access, deadlineMs: number, fields: JsonObject): JsonObject {
  return {
    version: PROTOCOL_VERSION, operation, operationId: opId ?? operationId(), partition,
    access, deadlineAt: deadlineAt(deadlineMs), ...fields,
  };
}

const encoder = new TextEncoder();
const decoder = new TextDecoder("utf-8", { fatal: true });

/** The body's bytes, sent unchanged by every attempt. */
export function encode(body: unknown): Uint8Array<ArrayBuffer> {
  return encoder.encode(JSON.stringify(body)) as Uint8Array<ArrayBuffer>;
}

/** The decoded 200 body, or throw the error the answer carries (`limit`: the contract's 64 KiB
 * for provider answers; `null` for the application doors). */
export function readAnswer(status: number, content: Uint8Array, limit: number | null = MAX_BODY_BYTES): unknown {
  if (limit !== null && content.byteLength > limit) {
    throw new ProtocolError(`answer of ${content.byteLength} bytes is over the 64 KiB limit`, { status });
  }
  let body: unknown;
  try {
    body = JSON.parse(decoder.decode(content));
  } catch {
    if (status === 200) throw new ProtocolError("answer is not JSON", { status });
    body = undefined;
  }
  if (status !== 200) throw fromEnvelope(status, body);
  return body;
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

const NUMBER = /^[1-9][0-9]{0,17}$/;

export function readRecall(body: unknown): Recall {
  if (!(isObject(body) && typeof body["text"] === "string" && Array.isArray(body["sources"]))) {
    throw new ProtocolError("recall answer without text and sources", { status: 200 });
  }
  const sources = body["sources"].map((source: unknown): Source => {
    const id = isObject(source) ? source["id"] : undefined;
    if (!(typeof id === "string" && NUMBER.test(id))) {
      throw new ProtocolError("recall source without a fact number as its id", { status: 200 });
    }
    return { ...(source as object), id: Number(id) } as Source;
  });
  const cursor = body["cursor"];
  return { text: body["text"], sources, cursor: typeof cursor === "string" ? cursor : null };
}

export function readResult(body: unknown): unknown {
  if (!(isObject(body) && isObject(body["result"]))) {
    throw new ProtocolError("tool answer without a result object", { status: 200 });
  }
  return body["result"];
}

export function readIngest(body: unknown): IngestResult {
  if (!(isObject(body) && Array.isArray(body["items"]) && typeof body["count"] === "number")) {
    throw new ProtocolError("ingest answer without items and count", { status: 200 });
  }
  return body as unknown as IngestResult;
}

export function readStore(body: unknown, count: number): unknown[] {
  const results = isObject(body) ? body["results"] : undefined;
  if (!Array.isArray(results) || results.length !== count) {
    throw new ProtocolError("store answer without one result per operation", { status: 200 });
  }
  return results;
}

/** A 200 JSONL export as its facts' records (its ledger lines, what the store forgot as hashes
 * for `semmem import`, are not facts). */
export function readFacts(status: number, content: Uint8Array): unknown[] {
  if (status !== 200) readAnswer(status, content, null);
  let lines: unknown[];
  try {
    lines = decoder.decode(content).split("\n").filter((line) => line.trim()).map((line) => JSON.parse(line) as unknown);
  } catch {
    throw new ProtocolError("answer is not JSON lines", { status });
  }
  return lines.filter((r) => !(typeof r === "object" && r !== null && ("ledger" in r || "digestKeys" in r)));
}

/** The messages as sent: `role`, `content` and `at` (a Date as ISO 8601 UTC). */
export function messagesOf(messages: Iterable<Message>): JsonObject[] {
  const out: JsonObject[] = [];
  for (const m of messages) {
    const sent: JsonObject = { role: m.role, content: m.content };
    if (m.at !== undefined && m.at !== null) sent["at"] = m.at instanceof Date ? m.at.toISOString() : m.at;
    out.push(sent);
  }
  if (out.length === 0) throw new RangeError("ingest needs at least one message");
  return out;
}

/** The recall text a host sends for a message of any length: itself when its JSON fits
 * `maxBytes`, else its start and its end (each cut on a character boundary) around a `…` line,
 * so the request stays within the contract's 64 KiB body. */
export const MAX_RECALL_TEXT_BYTES = 32 * 1024;

function jsonBytes(text: string): number {
  return encoder.encode(JSON.stringify(text)).byteLength;
}

/** The longest start of `text` within `maxBytes` UTF-8 bytes (never half a character). */
export function utf8Head(text: string, maxBytes: number): string {
  let bytes = 0;
  let end = 0;
  for (const char of text) {
    const cp = char.codePointAt(0)!;
    bytes += cp < 0x80 ? 1 : cp < 0x800 ? 2 : cp < 0x10000 ? 3 : 4;
    if (bytes > maxBytes) break;
    end += char.length;
  }
  return text.slice(0, end);
}

/** The longest end of `text` within `maxBytes` UTF-8 bytes (never half a character). */
export function utf8Tail(text: string, maxBytes: number): string {
  return [...utf8Head([...text].reverse().join(""), maxBytes)].reverse().join("");
}

export function recallText(text: string, maxBytes: number = MAX_RECALL_TEXT_BYTES): string {
  if (jsonBytes(text) <= maxBytes) return text;
  for (let half = Math.floor(maxBytes / 2) - 8; half > 0; half = Math.floor(half / 2)) {
    const cut = `${utf8Head(text, half)}\n…\n${utf8Tail(text, half)}`;
    if (jsonBytes(cut) <= maxBytes) return cut;
  }
  return "";
}
