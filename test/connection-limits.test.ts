import { once } from "node:events";
import { request as http1Request } from "node:http";
import { type ClientHttp2Session, connect as h2connect } from "node:http2";
import type { Socket } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type Simulator, startSimulator } from "../src/simulator/server.js";
import { simulatedText } from "../src/simulator/text.js";
import { chatClient, collect, textOf, transports, userRequest } from "./helpers/clients.js";
import { type GatewayProcess, startGatewayProcess } from "./helpers/gateway-process.js";
import { type Harness, startHarness } from "./helpers/harness.js";
import { startCommand } from "./helpers/processes.js";
import { closed, openSocket, rawExchange, statusOf } from "./helpers/raw.js";

const HEADERS_MS = 300;
const IDLE_MS = 400;
const REQUEST_MS = 500;

let h: Harness;
beforeAll(async () => {
  h = await startHarness({
    models: { sim: "sim-1?tokens=3", slow: "sim-1?tokens=20&delay_ms=60" },
    server: { headersTimeoutMs: HEADERS_MS, idleTimeoutMs: IDLE_MS, requestTimeoutMs: REQUEST_MS, maxStreamsPerConnection: 5 },
  });
});
afterAll(() => h.close());

const guard = () => h.sluice.server.connections;

/**
 * Milliseconds from `start` until `socket` closes. Lower bounds are measured
 * from before the client connects (or sends), so the interval encloses the
 * server's timer, which starts later: scheduling can only make it longer.
 */
async function closesAfter(socket: Socket, start: number): Promise<number> {
  socket.on("error", () => undefined);
  socket.resume();
  await closed(socket);
  return performance.now() - start;
}

describe("connections that never send a complete request are closed", () => {
  it("a socket that sends nothing: closed after server.headersTimeoutMs", async () => {
    const before = guard().closed.headers_timeout;
    const start = performance.now();
    const elapsed = await closesAfter(await openSocket(h.url), start);
    // Timers never fire early; how late they fire is the machine's business.
    expect(elapsed).toBeGreaterThanOrEqual(HEADERS_MS - 5);
    expect(guard().closed.headers_timeout).toBe(before + 1);
    console.log(`idle socket closed after ${elapsed.toFixed(0)} ms (headersTimeoutMs ${HEADERS_MS})`);
  });

  it("partial headers that never end: closed", async () => {
    const start = performance.now();
    const socket = await openSocket(h.url);
    socket.write("GET /healthz HTTP/1.1\r\nHost: x\r\n");
    expect(await closesAfter(socket, start)).toBeGreaterThanOrEqual(HEADERS_MS - 5);
  });

  it("headers trickled a byte at a time (slowloris): still closed at the headers deadline", async () => {
    const socket = await openSocket(h.url);
    const text = `GET /healthz HTTP/1.1\r\nHost: x\r\nX-Slow: ${"a".repeat(10_000)}\r\n\r\n`;
    let at = 0;
    const trickle = setInterval(() => socket.writable && socket.write(text[at++] ?? ""), 20);
    try {
      await closesAfter(socket, performance.now());
    } finally {
      clearInterval(trickle);
    }
    expect(at).toBeLessThan(text.length); // it was closed before the headers could complete
  });

  it("an HTTP/2 connection that opens no stream: closed", async () => {
    const start = performance.now();
    const session = h2connect(h.url);
    session.on("error", () => undefined);
    await once(session, "connect");
    await once(session, "close");
    expect(performance.now() - start).toBeGreaterThanOrEqual(HEADERS_MS - 5);
  });
});

describe("idle connections are closed; busy ones never are", () => {
  it("an HTTP/1.1 keep-alive connection idle after its response: closed after server.idleTimeoutMs", async () => {
    // A raw client: Node's own agent closes idle sockets itself, sooner.
    const start = performance.now();
    const response = await rawExchange(h.url, "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n");
    expect(statusOf(response)).toBe(200);
    expect(response.toLowerCase()).toContain("connection: keep-alive");
    expect(performance.now() - start).toBeGreaterThanOrEqual(IDLE_MS - 5);
  });

  it("an HTTP/2 session idle after its streams: GOAWAY and closed", async () => {
    const session = h2connect(h.url);
    session.on("error", () => undefined);
    // Before the request: the server's idle time starts when its stream closes, after this.
    const beforeRequest = performance.now();
    await new Promise<void>((resolve, reject) => {
      const stream = session.request({ ":path": "/healthz" });
      stream.on("data", () => undefined);
      stream.on("end", resolve);
      stream.on("error", reject);
    });
    await once(session, "close");
    expect(performance.now() - beforeRequest).toBeGreaterThanOrEqual(IDLE_MS - 5);
  });

  for (const kind of ["grpc (connect-node, h2)", "connect (connect-node, HTTP/1.1)"]) {
    it(`a stream that outlasts both deadlines completes (${kind})`, async () => {
      const started = performance.now();
      const messages = await collect(chatClient(transports(h.url)[kind]!).streamChat(userRequest("slow", "hi")));
      expect(performance.now() - started).toBeGreaterThan(HEADERS_MS + IDLE_MS);
      expect(textOf(messages)).toBe(simulatedText(1, 20));
      expect(messages.at(-1)!.delta.case).toBe("finish");
    });
  }
});

describe("request bodies that never finish", () => {
  function chunkedForever(path: string, contentType: string): Promise<{ status: number; body: string }> {
    const url = new URL(h.url);
    return new Promise((resolve, reject) => {
      const req = http1Request({ host: url.hostname, port: url.port, path, method: "POST", headers: { "content-type": contentType } }, (res) => {
        let body = "";
        res.on("data", (d: Buffer) => (body += d.toString()));
        res.on("end", () => resolve({ status: res.statusCode ?? 0, body }));
      });
      req.on("error", reject);
      req.write("{");
    });
  }

  it("the facade answers 408 after server.requestTimeoutMs", async () => {
    const start = performance.now();
    const res = await chunkedForever("/v1/chat/completions", "application/json");
    expect(res.status).toBe(408);
    expect(JSON.parse(res.body).error.message).toMatch(/request body not received within 500 ms/);
    expect(performance.now() - start).toBeGreaterThanOrEqual(REQUEST_MS - 5);
  });

  it("a Connect RPC gets DEADLINE_EXCEEDED", async () => {
    const res = await chunkedForever("/sluice.v1.ChatService/Chat", "application/json");
    expect(res.status).toBe(504);
    expect(JSON.parse(res.body)).toMatchObject({ code: "deadline_exceeded" });
  });

  it("a gRPC stream whose request never ends gets DEADLINE_EXCEEDED", async () => {
    const session = h2connect(h.url);
    try {
      const status = await new Promise<string | undefined>((resolve, reject) => {
        const stream = session.request({ ":method": "POST", ":path": "/sluice.v1.ChatService/StreamChat", "content-type": "application/grpc", te: "trailers" });
        let grpcStatus: string | undefined;
        stream.on("response", (headers) => (grpcStatus = headers["grpc-status"] as string | undefined));
        stream.on("trailers", (trailers) => (grpcStatus = trailers["grpc-status"] as string));
        stream.on("data", () => undefined);
        stream.on("end", () => resolve(grpcStatus));
        stream.on("error", reject);
        stream.write(Buffer.from([0, 0, 0, 0, 10]));
      });
      expect(status).toBe("4");
    } finally {
      session.destroy();
    }
  });
});

describe("HTTP/2 streams per connection", () => {
  it("the cap is advertised in SETTINGS", async () => {
    const session: ClientHttp2Session = h2connect(h.url);
    try {
      await once(session, "remoteSettings");
      expect(session.remoteSettings.maxConcurrentStreams).toBe(5);
    } finally {
      session.close();
    }
  });
});

describe("the connection ceiling", () => {
  let small: Harness;
  beforeAll(async () => {
    small = await startHarness({ models: { sim: "sim-1?tokens=3" }, server: { maxConnections: 20, headersTimeoutMs: 60_000 } });
  });
  afterAll(() => small.close());

  it("at the ceiling, a new connection closes the longest-idle one and is served", async () => {
    const idle: Socket[] = [];
    for (let i = 0; i < 20; i++) idle.push(await openSocket(small.url));
    const firstClosed = closesAfter(idle[0]!, performance.now());
    const res = await rawExchange(small.url, "GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
    expect(statusOf(res)).toBe(200);
    await firstClosed;
    expect(small.sluice.server.connections.closed.evicted).toBeGreaterThanOrEqual(1);
    for (const s of idle) s.destroy();
    await small.sluice.server.connections.whenAtMost(0);
  });

  it("when every connection is busy, a new one gets 503 and is closed", async () => {
    const client = chatClient(transports(small.url)["connect (connect-node, HTTP/1.1)"]!);
    const holds: AbortController[] = [];
    const streams: Array<Promise<unknown>> = [];
    // 20 streams over HTTP/1.1: 20 connections, each with a request in flight.
    for (let i = 0; i < 20; i++) {
      const abort = new AbortController();
      holds.push(abort);
      streams.push(collect(client.streamChat(userRequest("sim", `#sim fail=stall fail_at=1 tag=hold-${i}`), { signal: abort.signal })).catch(() => undefined));
    }
    await Promise.all(Array.from({ length: 20 }, (_, i) => small.sim.records.waitFor((r) => r.tag === `hold-${i}` && r.outcome === "stalled", 30_000)));
    const res = await rawExchange(small.url, "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n");
    expect(statusOf(res)).toBe(503);
    expect(small.sluice.server.connections.closed.refused).toBeGreaterThanOrEqual(1);
    holds.forEach((a) => a.abort());
    await Promise.all(streams);
  });
});

describe("3,000 idle connections", () => {
  let sim: Simulator;
  let gw: GatewayProcess;
  beforeAll(async () => {
    sim = await startSimulator();
    gw = await startGatewayProcess({ providers: { sim: { kind: "openai", baseUrl: sim.openAiBaseUrl } }, models: { sim: { provider: "sim", model: "sim-1?tokens=5" } } });
  });
  afterAll(async () => {
    await gw.stop();
    await sim.close();
  });

  it("leave /healthz and a normal stream working", async () => {
    const sockets: Socket[] = [];
    try {
      for (let i = 0; i < 3000; i += 100) sockets.push(...(await Promise.all(Array.from({ length: 100 }, () => openSocket(gw.url)))));
      const latencies: number[] = [];
      for (let i = 0; i < 20; i++) {
        const start = performance.now();
        expect((await fetch(`${gw.url}/healthz`)).status).toBe(200);
        latencies.push(performance.now() - start);
      }
      const messages = await collect(chatClient(transports(gw.url)["grpc (connect-node, h2)"]!).streamChat(userRequest("sim", "hi")));
      expect(textOf(messages)).toBe(simulatedText(1, 5));
      latencies.sort((a, b) => a - b);
      console.log(`/healthz under 3,000 idle connections: p50 ${latencies[10]!.toFixed(1)} ms, max ${latencies[19]!.toFixed(1)} ms`);
    } finally {
      for (const s of sockets) s.destroy();
    }
  });
});

describe("the connection ceiling under the open-file limit, said at start", () => {
  /** The built-in default (maxConnections 10,000) under `ulimit -n`, at the default log level: the lines up to server.listening. */
  async function startUnder(limit: number): Promise<ReadonlyArray<Record<string, unknown>>> {
    const gw = await startCommand("sh", ["-c", `ulimit -n ${limit} && exec "${process.execPath}" dist/src/main.js --port 0`], (l) => l.event === "server.listening");
    try {
      return [...gw.lines()];
    } finally {
      await gw.stop();
    }
  }

  it("the default lowered a little (20,000 descriptors: 9,872): no warning on every start", async () => {
    const lines = await startUnder(20_000);
    expect(lines.some((l) => l.event === "server.listening")).toBe(true);
    expect(lines.filter((l) => l.event === "server.max_connections_lowered")).toEqual([]);
  });

  it("a limit far below the ceiling (4,096 descriptors: 1,920): a warning naming both", async () => {
    const lines = await startUnder(4_096);
    expect(lines.find((l) => l.event === "server.max_connections_lowered")).toMatchObject({ level: 40, configured: 10_000, effective: 1_920, openFileLimit: 4_096 });
  });
});
