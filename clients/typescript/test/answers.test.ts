/** What the client reads and whom it says it is (issue 62, item 12): an answer over its limit
 * is refused as it streams in (a 256 MiB one is never read whole); a wrong token is
 * `Unauthorized` at once, not "no answer" after retries; credentials in the URL are refused by
 * name, and no printout of a client shows a password. */

import assert from "node:assert/strict";
import { createServer, type Server as HttpServer } from "node:http";
import type { AddressInfo } from "node:net";
import { inspect } from "node:util";
import { after, before, test } from "node:test";
import { ProtocolError, SemmemClient, Unauthorized } from "../src/index.js";
import { Proxy } from "./support/proxy.js";
import { PATH, Server, TOKEN, partition } from "./support/server.js";

let server: Server;
let proxy: Proxy;
before(async () => {
  server = await Server.start();
  proxy = await new Proxy(server.url).start();
});
after(async () => { await proxy?.stop(); await server?.stop(); });

/** A server answering every request with `bytes` of JSON-looking text, written as read. */
async function flood(bytes: number, declare: boolean): Promise<{ url: string; written: () => number; close: () => Promise<void> }> {
  let written = 0;
  const http: HttpServer = createServer((req, res) => {
    req.resume();
    res.writeHead(200, declare ? { "Content-Type": "application/json", "Content-Length": String(bytes) } : { "Content-Type": "application/json" });
    const chunk = Buffer.alloc(64 * 1024, 0x20);
    const pump = (): void => {
      while (written < bytes) {
        written += chunk.byteLength;
        if (!res.write(chunk)) { res.once("drain", pump); return; }
      }
      res.end();
    };
    res.on("close", () => { written = Math.min(written, bytes); });
    pump();
  });
  await new Promise<void>((r) => http.listen(0, "127.0.0.1", r));
  return {
    url: `http://127.0.0.1:${(http.address() as AddressInfo).port}`,
    written: () => written,
    close: () => new Promise((r) => { http.closeAllConnections(); http.close(() => r()); }),
  };
}

test("a 256 MiB answer is refused once past the limit as it streams, never read whole", async () => {
  for (const declare of [false, true]) {
    const big = await flood(256 * 1024 * 1024, declare);
    try {
      const client = new SemmemClient({ url: big.url, token: TOKEN, memoryPath: PATH });
      const before = process.memoryUsage().rss;
      await assert.rejects(client.recall(partition(), "x"), (e: unknown) => e instanceof ProtocolError && /over the limit of 65536 bytes/.test(e.message));
      const grown = process.memoryUsage().rss - before;
      assert.ok(grown < 64 * 1024 * 1024, `rss grew ${grown} bytes`);
      assert.ok(big.written() < 64 * 1024 * 1024, `the server wrote ${big.written()} bytes before the client stopped`);
    } finally {
      await big.close();
    }
  }
});

test("a wrong token is Unauthorized at once, one request, no retry", async () => {
  const wrong = new SemmemClient({ url: proxy.url, token: "not-the-token-0001", memoryPath: PATH });
  proxy.plan();
  await assert.rejects(wrong.recall(partition(), "x"), (e: unknown) => e instanceof Unauthorized && e.status === 401);
  await assert.rejects(wrong.store([{ op: "get", namespace: ["a"], key: "k" }]), Unauthorized);
  await assert.rejects(wrong.ingest(partition(), "s", [{ role: "user", content: "hi" }]), Unauthorized);
  assert.equal(proxy.seen.length, 3);
  // Straight to the server, with a body of megabytes it refuses before reading.
  const direct = new SemmemClient({ url: server.url, token: "not-the-token-0001", memoryPath: PATH });
  const long = Array.from({ length: 400 }, (_, i) => ({ role: "user", content: `message ${i} `.repeat(500) }));
  await assert.rejects(direct.ingest(partition(), "s", long), Unauthorized);
  await assert.rejects(direct.store(long.map((m, i) => ({ op: "put", namespace: ["a"], key: `k${i}`, value: m, index: [] }))), Unauthorized);
});

test("credentials in the URL are refused by name (never echoed); a token a header cannot carry too", () => {
  for (const url of ["http://user:s3cret-pass@127.0.0.1:8080", "http://s3cret-pass@127.0.0.1:8080"]) {
    assert.throws(() => new SemmemClient({ url }), (e: unknown) =>
      e instanceof TypeError && /credentials/.test(e.message) && !e.message.includes("s3cret") && !String(e.stack).includes("s3cret"));
  }
  assert.throws(() => new SemmemClient({ url: "http://127.0.0.1:8080", token: "abc\ndef" }), (e: unknown) =>
    e instanceof TypeError && /token must be visible ASCII/.test(e.message) && !e.message.includes("abc"));
  const client = new SemmemClient({ url: "http://127.0.0.1:8080/", token: "s3cret-token", adminToken: "s3cret-admin" });
  for (const shown of [String(client), `${client}`, inspect(client), JSON.stringify(client)]) {
    assert.ok(!shown.includes("s3cret"), shown);
  }
  assert.equal(String(client), "SemmemClient(http://127.0.0.1:8080/memory, access=read-write)");
});
