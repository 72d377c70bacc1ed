/** A real `semmem serve` for the tests: the repository's server run by its venv's Python
 * (`SEMMEM_SERVER_PYTHON`, default `../../.venv/bin/python`) with `PYTHONPATH` the repository,
 * on an ephemeral loopback port, a temporary data folder, provider and admin tokens, and the
 * fake (hashing) embedder through `serve`'s own code path — as the Python client's tests. */

import { spawn, type ChildProcess } from "node:child_process";
import { mkdtempSync, openSync, readFileSync, rmSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { after, before } from "node:test";
import { SemmemClient } from "../../src/index.js";

const here = dirname(fileURLToPath(import.meta.url));
export const PACKAGE = resolve(here, "../../..");  // dist/test/support → the package
export const REPO = resolve(PACKAGE, "../..");
export const PYTHON = process.env["SEMMEM_SERVER_PYTHON"] ?? resolve(PACKAGE, "../../.venv/bin/python");
export const TOKEN = "ts-test-token-provider-0001";
export const ADMIN_TOKEN = "ts-test-token-admin-00001";
export const PATH = "/oc-memory";

// `semmem serve`'s own code path with the fake embedder (tests/support/server.py's FAKE_LAUNCH).
export const FAKE_LAUNCH =
  "from semmem.embedding.fakes import HashingEmbedder; from semmem.settings import Settings; " +
  "from semmem.web.server import serve; serve(Settings(), embedder=HashingEmbedder())";

export function freePort(): Promise<number> {
  return new Promise((resolvePort, reject) => {
    const server = createServer();
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => {
      const address = server.address();
      server.close(() => resolvePort(typeof address === "object" && address ? address.port : 0));
    });
  });
}

export class Server {
  private constructor(readonly url: string, readonly data: string, private readonly proc: ChildProcess,
                      readonly log: string) {}

  /** Start a server (`launch`: the Python program; `env`: more settings) and wait until ready. */
  static async start(options: { launch?: string; env?: Record<string, string> } = {}): Promise<Server> {
    const data = mkdtempSync(join(tmpdir(), "semmem-ts-"));
    const port = await freePort();
    const env: Record<string, string> = {};
    for (const [k, v] of Object.entries(process.env)) if (!k.startsWith("SEMMEM_") && v !== undefined) env[k] = v;
    Object.assign(env, {
      PYTHONPATH: REPO, PYTHONUNBUFFERED: "1", SEMMEM_DATA: join(data, "db"), SEMMEM_HOST: "127.0.0.1",
      SEMMEM_PORT: String(port), SEMMEM_TOKENS: TOKEN, SEMMEM_ADMIN_TOKENS: ADMIN_TOKEN,
      SEMMEM_LOG_LEVEL: "warning", SEMMEM_PATH: PATH, SEMMEM_MAINTENANCE_DELAY_S: "0.2",
      OMP_NUM_THREADS: "1", OPENBLAS_NUM_THREADS: "1",
    }, options.env ?? {});
    const log = join(data, "server.log");
    const out = openSync(log, "a");
    const proc = spawn(PYTHON, ["-c", options.launch ?? FAKE_LAUNCH], { cwd: REPO, env, stdio: ["ignore", out, out] });
    const server = new Server(`http://127.0.0.1:${port}`, data, proc, log);
    process.once("exit", () => { if (proc.exitCode === null) proc.kill("SIGKILL"); });  // never outlive the tests
    const started = Date.now();
    try {
      for (;;) {
        if (proc.exitCode !== null) throw new Error(`server exited (${proc.exitCode}): ${server.output().slice(-2000)}`);
        try {
          if ((await fetch(`${server.url}/readyz`)).status === 200) return server;
        } catch { /* not listening yet */ }
        if (Date.now() - started > 120_000) throw new Error(`server not ready: ${server.output().slice(-2000)}`);
        await new Promise((r) => setTimeout(r, 50));
      }
    } catch (error) {
      await server.stop();  // no process or folder left behind
      throw error;
    }
  }

  output(): string {
    try { return readFileSync(this.log, "utf-8"); } catch { return ""; }
  }

  async stop(): Promise<void> {
    if (this.proc.exitCode === null) {
      const exited = new Promise((r) => this.proc.once("exit", r));
      this.proc.kill("SIGTERM");
      const timer = setTimeout(() => this.proc.kill("SIGKILL"), 15_000);
      await exited;
      clearTimeout(timer);
    }
    rmSync(this.data, { recursive: true, force: true });
  }
}

let counter = 0;
/** A partition of this test's own. */
export function partition(): string {
  counter += 1;
  return `user-${process.pid}-${counter}-${Math.random().toString(36).slice(2, 8)}`;
}

/** A real server for the test file that calls this (started before its tests, stopped after)
 * and a client of it with both tokens. */
export function servedClient(): { readonly server: Server; readonly client: SemmemClient } {
  let server: Server | undefined;
  let client: SemmemClient | undefined;
  before(async () => {
    server = await Server.start();
    client = new SemmemClient({ url: server.url, token: TOKEN, adminToken: ADMIN_TOKEN, memoryPath: PATH });
  });
  after(async () => { await server?.stop(); });
  return {
    get server(): Server { if (server === undefined) throw new Error("the server starts before the tests"); return server; },
    get client(): SemmemClient { if (client === undefined) throw new Error("the server starts before the tests"); return client; },
  };
}
