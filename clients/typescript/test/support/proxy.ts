/** A small scripted HTTP proxy in front of the server: each request takes the next step of
 * its script — forward it, drop it (close the socket, no answer), delay it, answer an error
 * without forwarding, or forward it and then drop the answer (the write commits, its reply is
 * lost) — and is recorded with its body and when it came. */

import { createServer, request as httpRequest, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo, Socket } from "node:net";

export type Step =
  | { kind: "forward" }
  | { kind: "drop" }
  | { kind: "delay"; ms: number }
  | { kind: "fail"; status: number; code: string; retryAfter?: string }
  | { kind: "lose-reply" };

export interface Seen { at: number; method: string; path: string; body: string }

export class Proxy {
  readonly seen: Seen[] = [];
  script: Step[] = [];
  private server: Server;
  private sockets = new Set<Socket>();

  constructor(private readonly upstream: string) {
    this.server = createServer((req, res) => void this.handle(req, res));
    this.server.on("connection", (s) => { this.sockets.add(s); s.on("close", () => this.sockets.delete(s)); });
  }

  async start(): Promise<this> {
    await new Promise<void>((r) => this.server.listen(0, "127.0.0.1", r));
    return this;
  }

  get url(): string {
    return `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
  }

  /** The script for the next requests (then every request is forwarded). */
  plan(...steps: Step[]): void {
    this.script = steps;
    this.seen.length = 0;
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const body = Buffer.concat(chunks);
    this.seen.push({ at: performance.now(), method: req.method ?? "", path: req.url ?? "", body: body.toString("utf-8") });
    const step = this.script.shift() ?? { kind: "forward" };
    if (step.kind === "drop") { req.socket.destroy(); return; }
    if (step.kind === "fail") {
      const headers: Record<string, string> = { "Content-Type": "application/json" };
      if (step.retryAfter !== undefined) headers["Retry-After"] = step.retryAfter;
      res.writeHead(step.status, headers).end(JSON.stringify({ error: { code: step.code, message: `scripted ${step.code}` } }));
      return;
    }
    if (step.kind === "delay") await new Promise((r) => setTimeout(r, step.ms));
    if (req.socket.destroyed) return;
    const upstream = await this.forward(req, body);
    if (step.kind === "lose-reply") { req.socket.destroy(); return; }
    res.writeHead(upstream.status, upstream.headers).end(upstream.body);
  }

  private forward(req: IncomingMessage, body: Buffer): Promise<{ status: number; headers: Record<string, string>; body: Buffer }> {
    return new Promise((resolve, reject) => {
      const headers = { ...req.headers, host: new URL(this.upstream).host };
      const out = httpRequest(this.upstream + (req.url ?? "/"), { method: req.method, headers }, (answer) => {
        const parts: Buffer[] = [];
        answer.on("data", (c: Buffer) => parts.push(c));
        answer.on("end", () => {
          const kept: Record<string, string> = {};
          for (const [k, v] of Object.entries(answer.headers)) {
            if (typeof v === "string" && !["connection", "keep-alive", "transfer-encoding"].includes(k)) kept[k] = v;
          }
          resolve({ status: answer.statusCode ?? 502, headers: kept, body: Buffer.concat(parts) });
        });
      });
      out.on("error", reject);
      out.end(body);
    });
  }

  async stop(): Promise<void> {
    for (const s of this.sockets) s.destroy();
    await new Promise((r) => this.server.close(r));
  }
}
