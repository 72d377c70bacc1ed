/** The repository README's "From TypeScript" section runs as written: its `npm pack` (on a copy
 * of the package: support/pack.ts), its install line in a fresh app folder (the tarball's path
 * made absolute; npm offline-first, from the cache `npm ci` filled), then its `app.mjs` against `semmem serve` as the README starts it (the
 * bundled model, token `local-dev-token-0001`, `/memory`; the port ephemeral, so the URL is the
 * one substitution), printing what its comments say. */

import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { basename, join, resolve } from "node:path";
import { after, before, test } from "node:test";
import { pack } from "./support/pack.js";
import { REPO, Server } from "./support/server.js";

const README = readFileSync(resolve(REPO, "README.md"), "utf-8");
const SECTION = README.slice(README.indexOf("### From TypeScript"), README.indexOf("\n### ", README.indexOf("### From TypeScript") + 5));
const MODEL = resolve(REPO, "models/all-MiniLM-L6-v2");
const LAUNCH = "import runpy, sys; sys.argv = ['semmem', 'serve']; runpy.run_module('semmem.cli', run_name='__main__')";

function blocks(language: string): string[] {
  return [...SECTION.matchAll(new RegExp("^```" + language + "\\n([\\s\\S]*?)^```", "gm"))].map((m) => m[1]!);
}

let server: Server;
let app: string;
before(async () => {
  assert.ok(existsSync(join(MODEL, ".verified")), "the bundled model (make model) is needed: the README's server serves it");
  server = await Server.start({ launch: LAUNCH, env: {
    SEMMEM_TOKENS: "local-dev-token-0001", SEMMEM_ADMIN_TOKENS: "", SEMMEM_PATH: "/memory", SEMMEM_MODEL: MODEL,
    SEMMEM_TORCH_THREADS: "1",
  } });
  app = mkdtempSync(join(tmpdir(), "semmem-readme-"));
});
after(async () => { await server?.stop(); if (app) rmSync(app, { recursive: true, force: true }); });

test("the README's TypeScript section: install, then app.mjs prints what its comments say", () => {
  const [sh] = blocks("sh");
  const lines = sh!.split("\n").map((l) => l.replace(/\s+#.*$/, "")).filter(Boolean);
  assert.deepEqual(lines.slice(0, 2), ["(cd clients/typescript && npm ci && npm pack)", "mkdir -p my-app && cd my-app"]);
  const install = lines[2]!.split(/\s+/);
  const tarball = pack(app);
  assert.deepEqual(install.slice(0, 3), ["npm", "install", `../clients/typescript/${basename(tarball)}`]);
  const dir = join(app, "my-app");
  mkdirSync(dir);
  writeFileSync(join(dir, "package.json"), "{}\n");
  execFileSync("npm", [...install.slice(1).map((a) => (a === install[2] ? tarball : a)),
    "--prefer-offline", "--no-audit", "--no-fund", "--loglevel=error"], { cwd: dir, stdio: "inherit" });
  const [js] = blocks("js");
  assert.ok(js!.includes('"http://127.0.0.1:8080"'));
  writeFileSync(join(dir, "app.mjs"), js!.replace('"http://127.0.0.1:8080"', JSON.stringify(server.url)));
  const printed = execFileSync("node", ["app.mjs"], { cwd: dir, encoding: "utf-8" }).trim().split("\n");
  const promised = [...js!.matchAll(/^console\.log\(.*\/\/ (.*)$/gm)].map((m) => m[1]!.trim());
  assert.equal(promised.length, 3);
  assert.deepEqual(printed, promised);
});
