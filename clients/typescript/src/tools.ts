/** The memory tools as the server declares them (`semmem declare --json`, bundled as
 * `DECLARED_TOOLS`; or read at run time from the server's `GET /openapi.json`). */

import { ProtocolError } from "./errors.js";
import type { JsonObject } from "./wire.js";

export interface ToolDeclaration {
  readonly name: string;
  readonly description: string;
  readonly access: "read" | "write";
  readonly idempotent: boolean;
  readonly input: JsonObject;
}

function isObject(value: unknown): value is Record<string, any> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/** The tools of `POST <memoryPath>` in a served OpenAPI document (what `semmem declare`
 * prints, with the descriptions this server's settings give). */
export function toolsFromOpenApi(document: unknown, memoryPath: string): ToolDeclaration[] {
  try {
    const doc = document as Record<string, any>;
    const post = doc["paths"][memoryPath]["post"];
    const choices: unknown[] = post["requestBody"]["content"]["application/json"]["schema"]["oneOf"];
    const schemas = doc["components"]["schemas"];
    const tools: ToolDeclaration[] = [];
    for (const choice of choices) {
      if (!isObject(choice) || typeof choice["$ref"] !== "string") continue;
      const schema = schemas[choice["$ref"].split("/").at(-1)!];
      const tool = schema["properties"]["tool"];
      if (tool === undefined) continue;
      tools.push({
        name: tool["const"], description: schema["description"], access: schema["x-access"],
        idempotent: schema["x-idempotent"] === true, input: schema["properties"]["arguments"],
      });
    }
    if (tools.length === 0) throw new TypeError("no tool");
    return tools;
  } catch (error) {
    throw new ProtocolError(`the OpenAPI document does not describe the tools of POST ${memoryPath}: ${(error as Error).message}`);
  }
}
