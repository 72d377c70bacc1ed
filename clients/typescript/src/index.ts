/** semmem's TypeScript client: the provider contract, ingestion, the store and the owner's
 * calls over `fetch`. Framework integrations: `semmem-client/ai` (Vercel AI SDK) and
 * `semmem-client/langgraph` (LangGraph.js). */
export { SemmemClient, Turn, DEFAULT_MAX_BYTES, DEFAULT_TIMEOUT_MS, DEFAULT_INGEST_TIMEOUT_MS, MAX_DOOR_ANSWER_BYTES } from "./client.js";
export type { ClientOptions, CallOptions, ToolOptions } from "./client.js";
export * from "./errors.js";
export { CONTRACT_RETRY, NO_RETRY, retryable, retryAfterMs } from "./retry.js";
export type { RetryPolicy } from "./retry.js";
export { DECLARED_TOOLS } from "./declaration.js";
export { toolsFromOpenApi } from "./tools.js";
export type { ToolDeclaration } from "./tools.js";
export { partitionOf, namespaceOf, userPartition, MAX_PARTITION_BYTES } from "./partitions.js";
export { operationId, recallText, MAX_RECALL_TEXT_BYTES, MAX_BODY_BYTES } from "./wire.js";
export type {
  Access, Forgotten, Found, IngestResult, Item, Json, JsonObject, Message, Recall, SearchResult,
  SessionSummary, Similar, Source, Uncertain, WriteResult,
} from "./wire.js";
