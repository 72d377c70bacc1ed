/** The bundled tool declarations are what `semmem declare --json` prints today: regenerate
 * with `node scripts/declare.mjs` when this fails (the schemas are never hand-copied). */

import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { resolve } from "node:path";
import { pathToFileURL } from "node:url";
import { test } from "node:test";
import { PACKAGE } from "./support/server.js";

test("src/declaration.ts is semmem declare's output", async () => {
  const script = pathToFileURL(resolve(PACKAGE, "scripts/declare.mjs")).href;
  const { declared } = await import(script) as { declared: () => string };
  const committed = readFileSync(resolve(PACKAGE, "src/declaration.ts"), "utf-8");
  assert.equal(committed, declared(), "src/declaration.ts drifted from `semmem declare --json`: run `node scripts/declare.mjs`");
});
