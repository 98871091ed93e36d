import { once } from "node:events";
import { createServer, type IncomingMessage } from "node:http";
import type { AddressInfo } from "node:net";

/** Each wire's field for why generation stopped, its word for a natural end, and its word for the output limit. */
const LIMIT_WORDS = new Map<string, readonly [string, string]>([
  ["finish_reason", ["stop", "length"]],
  ["stop_reason", ["end_turn", "max_tokens"]],
  ["finishReason", ["STOP", "MAX_TOKENS"]],
]);

function atLimit(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(atLimit);
  if (value === null || typeof value !== "object") return value;
  return Object.fromEntries(
    Object.entries(value).map(([key, v]) => {
      const words = LIMIT_WORDS.get(key);
      return [key, words && v === words[0] ? words[1] : atLimit(v)];
    }),
  );
}

/** The body with every natural stop turned into a stop at the output limit: whole JSON, or each SSE `data:` line. */
function rewrite(body: string, contentType: string): string {
  if (contentType.startsWith("application/json")) return JSON.stringify(atLimit(JSON.parse(body)));
  return body
    .split("\n")
    .map((line) => (line.startsWith("data: {") ? `data: ${JSON.stringify(atLimit(JSON.parse(line.slice(6))))}` : line))
    .join("\n");
}

async function bodyOf(req: IncomingMessage): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks);
}

export interface LengthProxy {
  /** The proxy's origin: a provider's base URL is this with the simulator's path. */
  readonly origin: string;
  close(): Promise<void>;
}

/**
 * An upstream whose every answer stops at the output limit: the
 * simulator's own answers (any wire, streamed or whole, LF line ends),
 * read whole and passed on with the stop reason rewritten. The simulator
 * has no knob for a length stop; this gives one without a fourth copy of
 * each wire's encoder. `target` is the simulator's origin, asked per request
 * (the harness starts the simulator after the proxy).
 */
export async function startLengthProxy(target: () => string): Promise<LengthProxy> {
  const server = createServer((req, res) => {
    void (async () => {
      const headers = Object.fromEntries(Object.entries(req.headers).filter((entry): entry is [string, string] => typeof entry[1] === "string" && !["host", "content-length", "connection"].includes(entry[0])));
      const method = req.method ?? "GET";
      const body = method === "GET" || method === "HEAD" ? undefined : await bodyOf(req);
      const upstream = await fetch(`${target()}${req.url ?? "/"}`, { method, headers, body });
      const contentType = upstream.headers.get("content-type") ?? "";
      const text = await upstream.text();
      res.writeHead(upstream.status, { "content-type": contentType });
      res.end(upstream.ok ? rewrite(text, contentType) : text);
    })().catch((error: unknown) => {
      res.writeHead(500, { "content-type": "text/plain" });
      res.end(String(error));
    });
  });
  server.listen(0, "127.0.0.1");
  await once(server, "listening");
  return {
    origin: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    close: () => new Promise<void>((resolve, reject) => server.close((e) => (e ? reject(e) : resolve()))),
  };
}
