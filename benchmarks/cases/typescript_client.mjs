// What the TypeScript client (clients/typescript) adds to a recall over a plain `fetch` of the
// same request: the same envelope (a fresh operation id and deadline each time, as the client
// builds them) sent N times each way, interleaved, to one `semmem serve` (the fake embedder:
// the server's time is beside the point) and to an in-process stub that answers at once (the
// client's own cost alone). Target (issue 56): at most 1 ms added at p50.
//
//   (cd clients/typescript && npm ci)     # builds dist/
//   SEMMEM_SERVER_PYTHON=.venv/bin/python node benchmarks/cases/typescript_client.mjs [--n 2000]
//   (or: .venv/bin/python -m benchmarks typescript [--n 2000])
import { createServer } from "node:http";
import { randomUUID } from "node:crypto";
import { SemmemClient } from "../../clients/typescript/dist/src/index.js";
import { PATH, Server, TOKEN } from "../../clients/typescript/dist/test/support/server.js";

const at = process.argv.indexOf("--n");
const N = at > 0 ? Number(process.argv[at + 1]) : 2000;
const WARMUP = Math.min(200, N);

function plainBody(partition, text) {
  return JSON.stringify({ version: 1, operation: "recall", operationId: `ts-${randomUUID().replaceAll("-", "")}`,
    partition, access: "read-write", deadlineAt: new Date(Date.now() + 10_000).toISOString(),
    input: { text }, maxBytes: 8192 });
}

async function plainRecall(url, partition, text) {
  const response = await fetch(url, { method: "POST", body: plainBody(partition, text),
    headers: { "Content-Type": "application/json", Accept: "application/json", Authorization: `Bearer ${TOKEN}` } });
  if (response.status !== 200) throw new Error(`HTTP ${response.status}`);
  return response.json();
}

const p = (xs, q) => [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor(q * xs.length))];

async function measure(label, url, client, partition) {
  const plain = [];
  const viaClient = [];
  for (let i = 0; i < WARMUP + N; i += 1) {
    const text = `what does the user like ${i % 50}`;
    const order = i % 2 === 0;
    for (const which of order ? ["plain", "client"] : ["client", "plain"]) {
      const start = performance.now();
      if (which === "plain") await plainRecall(url, partition, text);
      else await client.recall(partition, text);
      const took = performance.now() - start;
      if (i >= WARMUP) (which === "plain" ? plain : viaClient).push(took);
    }
  }
  const row = { against: label, n: N, plain_p50: p(plain, 0.5), client_p50: p(viaClient, 0.5),
    added_p50: p(viaClient, 0.5) - p(plain, 0.5), plain_p95: p(plain, 0.95), client_p95: p(viaClient, 0.95) };
  console.log(`| ${row.against} | ${N} | ${row.plain_p50.toFixed(3)} ms | ${row.client_p50.toFixed(3)} ms | ` +
    `${row.added_p50.toFixed(3)} ms | ${row.plain_p95.toFixed(3)} ms | ${row.client_p95.toFixed(3)} ms |`);
  return row;
}

console.log("| against | recalls each | fetch p50 | client p50 | added p50 | fetch p95 | client p95 |");
console.log("| --- | --- | --- | --- | --- | --- | --- |");

const server = await Server.start();
try {
  const client = new SemmemClient({ url: server.url, token: TOKEN, memoryPath: PATH });
  for (const fact of ["The user likes green tea", "The user plays the cello", "The user lives in Lyon"]) {
    await client.remember("bench", fact);
  }
  await measure("semmem serve (fake embedder, 3 facts)", server.url + PATH, client, "bench");
} finally {
  await server.stop();
}

const answer = JSON.stringify({ text: "1. The user likes green tea", sources: [{ id: "1", title: "The user likes green tea" }], cursor: "c1.1.x" });
const stub = createServer((req, res) => {
  req.resume();
  req.on("end", () => res.writeHead(200, { "Content-Type": "application/json" }).end(answer));
});
await new Promise((r) => stub.listen(0, "127.0.0.1", r));
const stubUrl = `http://127.0.0.1:${stub.address().port}`;
await measure("in-process stub (answers at once)", stubUrl + "/memory", new SemmemClient({ url: stubUrl, token: TOKEN }), "bench");
stub.close();
