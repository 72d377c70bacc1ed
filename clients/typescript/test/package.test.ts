/** The package as a consumer installs it (issue 62, item 12): `npm pack` run on a copy of this
 * folder (its `prepack` builds and strips the manifest, `postpack` restores it), then a fresh
 * project installs the tarball — not a path — with the frameworks, npm offline-first from the
 * cache `npm ci` filled. CommonJS `require()` of the three entry points, an ES import, a call to
 * a real server from each, and TypeScript with `moduleResolution: "node"` finding all three. */

import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, test } from "node:test";
import { pack } from "./support/pack.js";
import { PACKAGE, PATH, TOKEN, partition, servedClient } from "./support/server.js";

const served = servedClient();
const NPM = ["--prefer-offline", "--no-audit", "--no-fund", "--loglevel=error"];
let work: string;
let tarball: string;
let app: string;

before(() => {
  work = mkdtempSync(join(tmpdir(), "semmem-pack-"));
  tarball = pack(work);
  app = join(work, "app");
  mkdirSync(app);
  writeFileSync(join(app, "package.json"), JSON.stringify({ name: "consumer", private: true }) + "\n");
  execFileSync("npm", ["install", tarball, "ai@7", "@langchain/langgraph-checkpoint@1", "@langchain/core@1", ...NPM],
    { cwd: app, stdio: ["ignore", "ignore", "inherit"] });
});
after(() => { if (work) rmSync(work, { recursive: true, force: true }); });

test("the tarball holds the builds, README and LICENSE; its manifest runs no script (no prepare)", () => {
  const files = execFileSync("tar", ["tzf", tarball], { encoding: "utf-8" }).trim().split("\n");
  for (const f of ["package/LICENSE", "package/README.md", "package/dist/src/index.js", "package/dist/cjs/index.js", "package/dist/cjs/package.json"]) {
    assert.ok(files.includes(f), f);
  }
  assert.ok(!files.some((f) => f.includes("/test/")), "no tests packed");
  const installed = JSON.parse(readFileSync(join(app, "node_modules/semmem-client/package.json"), "utf-8")) as Record<string, unknown>;
  assert.equal(installed["scripts"], undefined);
  assert.equal(installed["devDependencies"], undefined);
  assert.match(readFileSync(join(app, "node_modules/semmem-client/LICENSE"), "utf-8"), /Apache License\s+Version 2\.0/);
});

test("CommonJS: require() of the three entry points works and reaches a real server", () => {
  const p = partition();
  writeFileSync(join(app, "app.cjs"), `
const { SemmemClient, Unauthorized } = require("semmem-client");
const { semmemMemory } = require("semmem-client/ai");
const { SemmemStore } = require("semmem-client/langgraph");
const { BaseStore } = require("@langchain/langgraph-checkpoint");
(async () => {
  const client = new SemmemClient({ url: process.argv[2], token: process.argv[3], memoryPath: process.argv[4] });
  await client.remember(process.argv[5], "Kai repairs bicycles");
  const recalled = await client.recall(process.argv[5], "bicycles");
  const store = new SemmemStore(client);
  console.log(JSON.stringify({ text: recalled.text, store: store instanceof BaseStore, memory: typeof semmemMemory,
    unauthorized: typeof Unauthorized }));
})().catch((e) => { console.error(e); process.exit(1); });
`);
  const out = JSON.parse(execFileSync("node", ["app.cjs", served.server.url, TOKEN, PATH, p], { cwd: app, encoding: "utf-8" })) as Record<string, unknown>;
  assert.deepEqual(out, { text: "1. Kai repairs bicycles", store: true, memory: "function", unauthorized: "function" });
});

test("ESM: import of the three entry points from the installed tarball", () => {
  writeFileSync(join(app, "app.mjs"), `
import { SemmemClient } from "semmem-client";
import { semmemMemory } from "semmem-client/ai";
import { SemmemStore } from "semmem-client/langgraph";
import { BaseStore } from "@langchain/langgraph-checkpoint";
const client = new SemmemClient({ url: "http://127.0.0.1:9" });
console.log(new SemmemStore(client) instanceof BaseStore, typeof semmemMemory);
`);
  assert.equal(execFileSync("node", ["app.mjs"], { cwd: app, encoding: "utf-8" }).trim(), "true function");
});

const TSC = join(PACKAGE, "node_modules/typescript/bin/tsc");

function typeCheck(dir: string, options: Record<string, unknown>, source: string): string {
  mkdirSync(dir, { recursive: true });
  writeFileSync(join(dir, "tsconfig.json"), JSON.stringify({ compilerOptions: { strict: true, noEmit: true, skipLibCheck: true,
    target: "ES2022", lib: ["ES2023", "DOM"], types: [], ...options }, files: ["main.ts"] }));
  writeFileSync(join(dir, "main.ts"), source);
  try {
    execFileSync("node", [TSC, "-p", dir], { cwd: app, encoding: "utf-8" });
    return "";
  } catch (error) {
    return String((error as { stdout?: string }).stdout);
  }
}

const CONSUMER = `
import { SemmemClient, Unauthorized, type Recall } from "semmem-client";
import { semmemMemory } from "semmem-client/ai";
import { SemmemStore } from "semmem-client/langgraph";
const client = new SemmemClient({ url: "http://127.0.0.1:9" });
const memory = semmemMemory({ client, partition: "p", onError: (e, phase) => void [e, phase] });
const store: SemmemStore = new SemmemStore(client);
const recalled: Promise<Recall> = client.recall("p", "x");
export { memory, store, recalled, Unauthorized };
`;

test("TypeScript with moduleResolution \"node\" (CommonJS) finds the three entry points and their types", () => {
  const options = { module: "commonjs", moduleResolution: "node" };
  assert.equal(typeCheck(join(app, "tsc-node"), options, CONSUMER), "");
  // The types are the package's, not `any`: a wrong use is an error.
  const wrong = typeCheck(join(app, "tsc-node-wrong"), options, CONSUMER + `const n: number = client.url;\n`);
  assert.match(wrong, /main\.ts\(\d+,\d+\): error TS2322/);
});

test("TypeScript with NodeNext agrees: a CommonJS project type-checks what require() loads", () => {
  const dir = join(app, "tsc-nodenext");
  assert.equal(typeCheck(dir, { module: "nodenext", moduleResolution: "nodenext" }, CONSUMER), "");
  assert.ok(existsSync(join(app, "node_modules/semmem-client/dist/cjs/index.d.ts")));
  assert.ok(readdirSync(join(app, "node_modules/semmem-client/dist/cjs")).includes("package.json"));
});
