import { EventEmitter } from "node:events";
import { Readable } from "node:stream";
import { createExchange, type Exchange } from "../../../src/http/exchange.js";
import type { AnyRequest, AnyResponse } from "../../../src/http/node-http.js";
import { createLogger } from "../../../src/logging/logger.js";
import type { Route } from "../../../src/server/request-guard.js";
import { createTracing } from "../../../src/telemetry/tracing.js";

/** What an in-memory exchange answered, and what the edge did with the request body. */
export interface MemoryAnswer {
  readonly status: number;
  readonly headers: Readonly<Record<string, string>>;
  /** The body as written, chunks joined. */
  readonly body: string;
  /** Each write() as it came (SSE edges write a read's events together). */
  readonly writes: readonly string[];
  /** Whether the edge read the request body at all. */
  readonly bodyRead: boolean;
  readonly exchange: Exchange;
}

export interface MemoryRequest {
  readonly method?: string;
  readonly path: string;
  readonly headers?: Record<string, string>;
  readonly body?: unknown;
  /** Aborts the exchange as a client leaving would (the response's `close` before its end). */
  readonly leaveAfterWrites?: number;
}

const tracing = createTracing({ config: { tracing: {} } as never, env: {}, logger: createLogger("silent") });

/**
 * One HTTP exchange through a route, with no socket: a readable request
 * and a response that records what the edge wrote. For call semantics
 * (authentication before the body, quota headers on refusal, the
 * dropped-parameter notice, a client leaving); the wire tier checks the
 * same over real HTTP/1.1 and HTTP/2 with real clients.
 */
export async function inject(route: Route, request: MemoryRequest): Promise<MemoryAnswer> {
  const text = request.body === undefined ? "" : typeof request.body === "string" ? request.body : JSON.stringify(request.body);
  let bodyRead = false;
  const source = Readable.from(text === "" ? [] : [Buffer.from(text)]);
  const req = Object.assign(source, {
    method: request.method ?? "POST",
    url: request.path,
    headers: { "content-type": "application/json", "content-length": String(Buffer.byteLength(text)), ...request.headers },
    complete: false,
    socket: new EventEmitter(),
  });
  // Reading the body means listening for its data: note who does.
  const on = source.on.bind(source);
  source.on = ((event: string, listener: (...args: unknown[]) => void) => {
    if (event === "data") bodyRead = true;
    return on(event, listener);
  }) as typeof source.on;

  const writes: string[] = [];
  let status = 0;
  const headers: Record<string, string> = {};
  const res = Object.assign(new EventEmitter(), {
    headersSent: false,
    writableEnded: false,
    destroyed: false,
    statusCode: 200,
    setHeader(name: string, value: string) {
      headers[name.toLowerCase()] = String(value);
    },
    writeHead(code: number, more: Record<string, string> = {}) {
      status = code;
      res.statusCode = code;
      for (const [k, v] of Object.entries(more)) headers[k.toLowerCase()] = String(v);
      res.headersSent = true;
      return res;
    },
    write(chunk: string | Uint8Array) {
      if (!res.headersSent) res.writeHead(200);
      writes.push(Buffer.from(chunk).toString("utf8"));
      if (request.leaveAfterWrites !== undefined && writes.length >= request.leaveAfterWrites) queueMicrotask(() => res.destroy());
      return true;
    },
    end(chunk?: string | Uint8Array) {
      if (chunk !== undefined && typeof chunk !== "function") res.write(chunk);
      if (!res.headersSent) res.writeHead(200);
      res.writableEnded = true;
      queueMicrotask(() => res.emit("close"));
      return res;
    },
    destroy() {
      if (res.destroyed) return;
      res.destroyed = true;
      res.emit("close");
    },
  });
  const ended = new Promise<void>((resolve) => res.once("close", () => resolve()));
  const exchange = createExchange(req as unknown as AnyRequest, res as unknown as AnyResponse, tracing);
  await route(req as unknown as AnyRequest, res as unknown as AnyResponse, exchange);
  await ended;
  return { status, headers, body: writes.join(""), writes, bodyRead, exchange };
}

/** The SSE events of a body: `{event, data}` with data parsed when it is JSON. */
export function sseEvents(body: string): Array<{ event?: string; data?: unknown; comment?: string }> {
  return body
    .split("\n\n")
    .filter((block) => block.trim() !== "")
    .map((block) => {
      const out: { event?: string; data?: unknown; comment?: string } = {};
      for (const line of block.split("\n")) {
        if (line.startsWith(":")) out.comment = line.slice(1).trim();
        else if (line.startsWith("event: ")) out.event = line.slice(7);
        else if (line.startsWith("data: ")) {
          const raw = line.slice(6);
          try {
            out.data = JSON.parse(raw);
          } catch {
            out.data = raw;
          }
        }
      }
      return out;
    });
}
