import { once } from "node:events";
import { createServer as createHttp1Server, type Server } from "node:http";
import { createServer as createHttp2Server, type Http2Server, connect as h2connect } from "node:http2";
import type { AddressInfo } from "node:net";
import { PassThrough } from "node:stream";
import { request } from "undici";
import { afterEach, describe, expect, it } from "vitest";
import { resolveConfig } from "../src/config/config.js";
import { writeChunk } from "../src/http/node-http.js";
import { createLogger } from "../src/logging/logger.js";
import { guardRequests, type Route } from "../src/server/request-guard.js";
import { createTracing } from "../src/telemetry/tracing.js";

interface Served {
  readonly url: string;
  logs(): Array<Record<string, unknown>>;
  /** Resolves when a log line matching `predicate` has been written (now or later). */
  logged(predicate: (line: Record<string, unknown>) => boolean): Promise<void>;
  close(): Promise<void>;
}

const servers: Served[] = [];
afterEach(async () => {
  await Promise.all(servers.splice(0).map((s) => s.close()));
});

/** A bare HTTP server of either version whose only listener is the guarded route. */
async function serve(version: "1.1" | "2", route: Route): Promise<Served> {
  let text = "";
  const sink = new PassThrough();
  sink.on("data", (d: Buffer) => (text += d.toString()));
  const logger = createLogger("debug", sink);
  const listener = guardRequests(
    route,
    logger,
    createTracing({ config: resolveConfig({ providers: { p: { kind: "openai", baseUrl: "http://127.0.0.1:9/v1" } }, models: { m: { provider: "p", model: "m" } } }, {}).telemetry, env: {}, logger }),
  );
  const server: Server | Http2Server = version === "1.1" ? createHttp1Server(listener) : createHttp2Server(listener);
  server.listen(0, "127.0.0.1");
  await once(server, "listening");
  const logs = () =>
    text
      .split("\n")
      .filter(Boolean)
      .map((l) => JSON.parse(l) as Record<string, unknown>);
  const served = {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    logs,
    logged: (predicate: (line: Record<string, unknown>) => boolean) =>
      new Promise<void>((resolve) => {
        const check = () => {
          if (!logs().some(predicate)) return;
          sink.off("data", check);
          resolve();
        };
        sink.on("data", check);
        check();
      }),
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        if ("closeAllConnections" in server) server.closeAllConnections();
      }),
  };
  servers.push(served);
  return served;
}

async function h2get(url: string, path: string): Promise<{ status: number; body: string; error?: string }> {
  const session = h2connect(url);
  try {
    return await new Promise((resolve) => {
      const stream = session.request({ ":path": path });
      let status = 0;
      let body = "";
      stream.on("response", (h) => (status = Number(h[":status"])));
      stream.on("data", (d: Buffer) => (body += d.toString()));
      stream.on("end", () => resolve({ status, body }));
      stream.on("error", (e: NodeJS.ErrnoException) => resolve({ status, body, error: e.code ?? "error" }));
    });
  } finally {
    session.close();
  }
}

async function get(version: "1.1" | "2", url: string, path: string): Promise<{ status: number; body: string; error?: string }> {
  if (version === "2") return h2get(url, path);
  try {
    const res = await request(`${url}${path}`);
    return { status: res.statusCode, body: await res.body.text() };
  } catch (e) {
    return { status: 0, body: "", error: (e as NodeJS.ErrnoException).code ?? "error" };
  }
}

const ROUTE: Route = (req, res) => {
  if (req.url === "/throw") throw new URIError("URI malformed");
  if (req.url === "/reject") return Promise.reject(new TypeError("later"));
  if (req.url === "/throw-mid-response") {
    res.writeHead(200, { "content-type": "text/plain" });
    writeChunk(res, "partial");
    return new Promise((_, reject) => setImmediate(() => reject(new Error("after the headers"))));
  }
  res.writeHead(200);
  res.end("fine");
};

describe.each(["1.1", "2"] as const)("the request guard over HTTP/%s", (version) => {
  it("a handler that throws synchronously gives 500 with a request id, is logged, and the server keeps serving", async () => {
    const s = await serve(version, ROUTE);
    const crashed = await get(version, s.url, "/throw");
    expect(crashed.status).toBe(500);
    expect(JSON.parse(crashed.body)).toMatchObject({ error: { code: "internal", message: "internal error" } });
    expect(crashed.body).not.toContain("URI malformed");
    const line = s.logs().find((l) => l.event === "request.crashed");
    expect(line).toMatchObject({ requestId: expect.stringMatching(/^req_/) });
    expect((await get(version, s.url, "/ok")).body).toBe("fine");
  });

  it("a handler whose promise rejects gives 500", async () => {
    const s = await serve(version, ROUTE);
    expect((await get(version, s.url, "/reject")).status).toBe(500);
    expect((await get(version, s.url, "/ok")).status).toBe(200);
  });

  it("a failure after the response started resets it instead of pretending it is complete", async () => {
    const s = await serve(version, ROUTE);
    const broken = await get(version, s.url, "/throw-mid-response");
    expect(broken.error).toBeDefined();
    expect((await get(version, s.url, "/ok")).body).toBe("fine");
  });

  it("every request gets exactly one access line, crashed or not", async () => {
    const s = await serve(version, ROUTE);
    await get(version, s.url, "/ok");
    await get(version, s.url, "/throw");
    // The line is written when the response closes, just after the client saw it end.
    await s.logged((l) => l.event === "access" && l.code === "internal");
    const lines = () => s.logs().filter((l) => l.event === "access");
    expect(lines().map((l) => l.code)).toEqual([undefined, "internal"]);
    expect(lines().every((l) => typeof l.requestId === "string" && typeof l.durationMs === "number")).toBe(true);
  });
});
