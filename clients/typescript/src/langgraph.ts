/**
 * LangGraph.js's `BaseStore` over semmem's `POST /store`: `new SemmemStore(client)` is the
 * `store` of a compiled graph (`graph.compile({ store })`) or of `createReactAgent`.
 *
 * Items are the application's store items (never seen or changed by the model's memory
 * tools); a namespace is a partition (`partitionOf`: labels with `%`→`%25`, `/`→`%2F`, joined
 * by `/`), so deleting a user's partition deletes their store items too.
 *
 * Semantics are LangGraph.js's (`InMemoryStore`), not LangGraph (Python)'s: a batch's reads
 * (get, search, listNamespaces) see the state before the batch's writes, and of several puts of
 * one key in a batch the last wins — the batch is sent as one `POST /store` with its reads first
 * and its de-duplicated puts after them. LangGraph.js has no TTL; `ttlMinutes` (an extension)
 * makes every put expire. Divergences from `InMemoryStore` are listed in the package README.
 */

import { BaseStore, type Item, type Operation, type OperationResults, type SearchItem } from "@langchain/langgraph-checkpoint";
import type { SemmemClient } from "./client.js";
import { getTextAtPath, tokenizePath } from "./textpath.js";
import type { Json, JsonObject } from "./wire.js";

export { partitionOf, namespaceOf } from "./partitions.js";

export interface SemmemStoreOptions {
  /** The value paths embedded for `search({ query })` (LangGraph.js's `index.fields`); default
   * `["$"]`, the whole value as JSON. semmem always embeds, with the server's model. */
  index?: { fields?: string[] };
  /** Every put expires this many minutes after it is written (semmem's `ttl`; LangGraph.js's
   * stores have none). */
  ttlMinutes?: number;
}

/** An item's index texts together, in characters (code points), as the server counts them. */
export const MAX_INDEX_CHARS = 256 * 1024;

type Put = { namespace: string[]; key: string; value: Record<string, any> | null; index?: false | string[] };

function isPut(op: Operation): op is Put { return "value" in op; }
function isSearch(op: Operation): op is Extract<Operation, { namespacePrefix: string[] }> { return "namespacePrefix" in op; }
function isList(op: Operation): op is Extract<Operation, { matchConditions?: unknown }> { return "limit" in op && !("namespacePrefix" in op); }

/** The texts a put indexes, as InMemoryStore takes them: those at each of the put's `index`
 * paths, else the store's fields (`false`: none). */
export function indexTexts(value: Record<string, any>, index: false | string[] | undefined, fields: readonly string[]): string[] {
  if (index === false) return [];
  const paths = index ?? fields;
  const texts: string[] = [];
  for (const path of paths) {
    texts.push(...(getTextAtPath(value, path === "$" ? "$" : tokenizePath(path)) as string[]));
  }
  return fitIndex(texts.filter((t) => typeof t === "string" && t.trim() !== ""));
}

/** The texts within the server's `MAX_INDEX_CHARS` together: in order, the last one kept cut
 * (semmem embeds a long text in pieces; InMemoryStore's model would truncate it anyway). */
function fitIndex(texts: string[]): string[] {
  const out: string[] = [];
  let left = MAX_INDEX_CHARS;
  for (const text of texts) {
    const chars = [...text];
    if (chars.length <= left) { out.push(text); left -= chars.length; continue; }
    const cut = chars.slice(0, left).join("");
    if (cut.trim()) out.push(cut);
    break;
  }
  return out;
}

/** A search filter as the server reads it: ±Infinity and NaN (which JSON cannot hold) as the
 * server's `{"$float": "inf" | "-inf" | "nan"}`; an `undefined` operand refused (JSON would
 * drop it, and with it the condition: every item would match). */
export function wireFilter(filter: Record<string, unknown>): JsonObject {
  const walk = (value: unknown, path: string): Json => {
    if (value === undefined) {
      throw new TypeError(`filter ${path} is undefined: JSON cannot carry it (the condition would vanish and every item match); ` +
        "leave the field out, or use null (which matches a missing or null field)");
    }
    if (typeof value === "number" && !Number.isFinite(value)) {
      return { $float: Number.isNaN(value) ? "nan" : value > 0 ? "inf" : "-inf" };
    }
    if (Array.isArray(value)) return value.map((v, i) => walk(v, `${path}[${i}]`));
    if (typeof value === "object" && value !== null) {
      return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, walk(v, `${path}.${k}`)]));
    }
    return value as Json;
  };
  return Object.fromEntries(Object.entries(filter).map(([k, v]) => [k, walk(v, JSON.stringify(k))]));
}

interface Wired { namespace: string[]; key: string; value: Record<string, any>; createdAt: string; updatedAt: string; score?: number | null }

function item(found: Wired): Item {
  return { value: found.value, key: found.key, namespace: found.namespace,
    createdAt: new Date(found.createdAt), updatedAt: new Date(found.updatedAt) };
}

export class SemmemStore extends BaseStore {
  readonly fields: readonly string[];
  readonly ttlMinutes: number | undefined;

  constructor(readonly client: SemmemClient, options: SemmemStoreOptions = {}) {
    super();
    this.fields = options.index?.fields ?? ["$"];
    this.ttlMinutes = options.ttlMinutes;
  }

  /** Run `operations` as LangGraph.js's stores do, in one call to the server. */
  async batch<Op extends readonly Operation[]>(operations: Op): Promise<OperationResults<Op>> {
    const reads: number[] = [];
    const puts = new Map<string, Put>();
    const wire: JsonObject[] = [];
    operations.forEach((op, i) => {
      if (isPut(op)) puts.set(JSON.stringify([op.namespace, op.key]), op);
      else { reads.push(i); wire.push(this.#read(op)); }
    });
    for (const put of puts.values()) wire.push(this.#put(put));
    const results: unknown[] = operations.map(() => null);  // a put answers null, as InMemoryStore
    if (wire.length === 0) return results as OperationResults<Op>;
    const answers = await this.client.store(wire);
    reads.forEach((at, j) => { results[at] = this.#result(operations[at]!, answers[j]!); });
    return results as OperationResults<Op>;
  }

  #read(op: Operation): JsonObject {
    if (isSearch(op)) {
      const out: JsonObject = { op: "search", prefix: op.namespacePrefix, query: op.query ?? null,
        filter: op.filter ? wireFilter(op.filter) : null, limit: op.limit ?? 10, offset: op.offset ?? 0 };
      return out;
    }
    if (isList(op)) {
      return { op: "list", limit: op.limit, offset: op.offset, maxDepth: op.maxDepth ?? null,
        conditions: (op.matchConditions ?? []).map((c) => ({ type: c.matchType, path: c.path })) };
    }
    const get = op as { namespace: string[]; key: string };
    return { op: "get", namespace: get.namespace, key: get.key };
  }

  #put(op: Put): JsonObject {
    if (op.value === null) return { op: "put", namespace: op.namespace, key: op.key, value: null };
    return { op: "put", namespace: op.namespace, key: op.key, value: op.value as JsonObject,
      index: indexTexts(op.value, op.index, this.fields), ttl: this.ttlMinutes ?? null };
  }

  #result(op: Operation, answer: Json): unknown {
    if (isSearch(op)) {
      return (answer as unknown as Wired[]).map((found): SearchItem => {
        const out: SearchItem = item(found);
        out.score = typeof found.score === "number" ? found.score : undefined;
        return out;
      });
    }
    // LangGraph.js cuts to depth 0 by joining and splitting the labels: `[""]`, not `[]`.
    if (isList(op)) return op.maxDepth === 0 ? (answer as string[][]).map((ns) => (ns.length === 0 ? [""] : ns)) : answer;
    return answer === null ? null : item(answer as unknown as Wired);
  }
}
