import { request as http1Request } from "node:http";
import { type ClientHttp2Session, connect as h2connect } from "node:http2";
import { toBinary } from "@bufbuild/protobuf";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { StreamChatRequestSchema } from "../gen/sluice/v1/chat_service_pb.js";
import { createRandom } from "../src/simulator/random.js";
import { type Simulator, startSimulator } from "../src/simulator/server.js";
import { userRequest } from "./helpers/clients.js";
import { type GatewayProcess, runtimeStats, startGatewayProcess } from "./helpers/gateway-process.js";
import { grpcFrame } from "./helpers/raw.js";

/**
 * Every edge and HTTP version, spoken by a raw client so that the test
 * controls the connection: it can stop reading and then drop the socket,
 * which no generated client does on purpose.
 */
type Edge = "gRPC h2" | "Connect h1" | "Connect h2" | "gRPC-Web h1" | "facade h1" | "facade h2";
const EDGES: readonly Edge[] = ["gRPC h2", "Connect h1", "Connect h2", "gRPC-Web h1", "facade h1", "facade h2"];

function requestFor(edge: Edge, prompt: string): { path: string; headers: Record<string, string>; body: Buffer } {
  const id = { "x-request-id": `hyg-${++requests}` };
  const made = requestBody(edge, prompt);
  return { ...made, headers: { ...made.headers, ...id } };
}

let requests = 0;

function requestBody(edge: Edge, prompt: string): { path: string; headers: Record<string, string>; body: Buffer } {
  if (edge.startsWith("facade")) {
    return {
      path: "/v1/chat/completions",
      headers: { "content-type": "application/json" },
      body: Buffer.from(JSON.stringify({ model: "sim", stream: true, messages: [{ role: "user", content: prompt }] })),
    };
  }
  const body = grpcFrame(toBinary(StreamChatRequestSchema, userRequest("sim", prompt)));
  const path = "/sluice.v1.ChatService/StreamChat";
  if (edge === "gRPC h2") return { path, headers: { "content-type": "application/grpc", te: "trailers" }, body };
  if (edge === "gRPC-Web h1") return { path, headers: { "content-type": "application/grpc-web+proto", "x-grpc-web": "1" }, body };
  return { path, headers: { "content-type": "application/connect+proto", "connect-protocol-version": "1" }, body };
}

/** A response being read, with the two ways a careless client leaves. */
interface OpenStream {
  /** The x-request-id it was sent with: its access line says when the gateway let go of it. */
  readonly requestId: string;
  /** Resolves after `n` chunks of the response body have arrived. */
  chunks(n: number): Promise<void>;
  /** Stops reading: flow control and socket buffers fill up. */
  stopReading(): void;
  /** Cancels the stream (HTTP/2 RST_STREAM CANCEL; HTTP/1.1 closes the connection). */
  cancel(): void;
  /** Drops the whole connection. */
  disconnect(): void;
}

function open(url: string, edge: Edge, prompt: string): OpenStream {
  const { path, headers, body } = requestFor(edge, prompt);
  const requestId = headers["x-request-id"]!;
  let received = 0;
  const waiters: Array<{ n: number; wake: () => void }> = [];
  const onChunk = () => {
    received++;
    for (const w of [...waiters]) if (received >= w.n) waiters.splice(waiters.indexOf(w), 1) && w.wake();
  };
  const chunks = (n: number) => (received >= n ? Promise.resolve() : new Promise<void>((wake) => waiters.push({ n, wake })));
  if (edge.endsWith("h2")) {
    const session: ClientHttp2Session = h2connect(url);
    session.on("error", () => undefined);
    const stream = session.request({ ":method": "POST", ":path": path, ...headers });
    stream.on("error", () => undefined);
    stream.on("data", onChunk);
    stream.end(body);
    return { requestId, chunks, stopReading: () => stream.pause(), cancel: () => stream.close(8 /* CANCEL */), disconnect: () => session.destroy() };
  }
  const { hostname, port } = new URL(url);
  const req = http1Request({ host: hostname, port, path, method: "POST", headers, agent: false });
  let response: { pause(): void } | undefined;
  req.on("response", (res) => {
    response = res;
    res.on("data", onChunk);
    res.on("error", () => undefined);
  });
  req.on("error", () => undefined);
  req.end(body);
  return { requestId, chunks, stopReading: () => response?.pause(), cancel: () => req.destroy(), disconnect: () => req.destroy() };
}

let sim: Simulator;
let gw: GatewayProcess;
beforeAll(async () => {
  sim = await startSimulator();
  gw = await startGatewayProcess(
    {
      server: { debugEndpoints: true },
      // debug: cancels at point 0 wait for the stream.accepted line.
      log: { level: "debug" },
      providers: { sim: { kind: "openai", baseUrl: sim.openAiBaseUrl } },
      models: { sim: { provider: "sim", model: "sim-1" } },
    },
    { nodeArgs: ["--expose-gc"] },
  );
});
afterAll(async () => {
  await gw.stop();
  await sim.close();
});

/**
 * Waits until the gateway has let go of these requests (its access line,
 * written when the response closes, after the stream's slot and upstream
 * request were released), then until the simulator saw every upstream
 * request that was made end.
 */
async function released(streams: readonly OpenStream[], prefix: string): Promise<void> {
  await Promise.all(streams.map((s) => gw.waitForLine((l) => l.event === "access" && l.requestId === s.requestId)));
  await upstreamsEnded(prefix);
}

async function upstreamsEnded(prefix: string): Promise<void> {
  const tagged = sim.records.all().filter((r) => r.tag?.startsWith(prefix));
  await Promise.all(tagged.map((r) => sim.records.waitFor((x) => x.id === r.id && x.endedAt !== undefined, 30_000)));
}

describe.each(EDGES)("stream hygiene, %s", (edge) => {
  const prefix = edge.replace(/\W+/g, "-");

  it("clients that cancel at random points release everything", async () => {
    const next = createRandom(edge.length * 7919);
    const opened: OpenStream[] = [];
    const lanes = Array.from({ length: 8 }, async (_, lane) => {
      for (let i = 0; i < 6; i++) {
        const s = open(gw.url, edge, `#sim tokens=5000 delay_ms=2 tag=${prefix}-cancel-${lane}-${i}`);
        opened.push(s);
        const after = Math.floor(next() * 12);
        // 0: as soon as the gateway has the request, before its first delta.
        if (after > 0) await s.chunks(after);
        else await gw.waitForLine((l) => l.event === "stream.accepted" && l.requestId === s.requestId);
        s.cancel();
      }
    });
    await Promise.all(lanes);
    await released(opened, `${prefix}-cancel-`);
    const stats = await runtimeStats(gw.url);
    expect(stats.activeStreams).toBe(0);
    expect(sim.stats().activeRequests).toBe(0);
  });

  it("clients that stop reading and then disconnect release everything", async () => {
    const streams = Array.from({ length: 5 }, (_, i) => {
      const tag = `${prefix}-stall-${i}`;
      return { tag, stream: open(gw.url, edge, `#sim tokens=20000 token_chars=1000 tag=${tag}`) };
    });
    for (const { tag, stream } of streams) {
      await stream.chunks(1);
      stream.stopReading();
      // Backpressure has reached the upstream: the gateway is blocked writing to this client.
      await sim.records.waitFor((r) => r.tag === tag && r.waitingForDrain === true, 30_000);
    }
    expect((await runtimeStats(gw.url)).activeStreams).toBe(5);
    for (const { stream } of streams) stream.disconnect();
    await released(
      streams.map((s) => s.stream),
      `${prefix}-stall-`,
    );
    expect((await runtimeStats(gw.url)).activeStreams).toBe(0);
    expect(
      sim.records
        .all()
        .filter((r) => r.tag?.startsWith(`${prefix}-stall-`))
        .every((r) => r.outcome === "client_closed"),
    ).toBe(true);
  });
});

describe("after every edge's hygiene runs", () => {
  it("no streams, no upstream requests, no timer growth, heap back near its baseline", async () => {
    const baseline = await runtimeStats(gw.url, "?gc=1");
    // One more round of each, now that pools, sessions and JIT are warm.
    const finals: OpenStream[] = [];
    for (const edge of EDGES) {
      const tag = `final-${edge.replace(/\W+/g, "-")}`;
      const s = open(gw.url, edge, `#sim tokens=20000 token_chars=1000 tag=${tag}`);
      finals.push(s);
      await s.chunks(1);
      s.stopReading();
      await sim.records.waitFor((r) => r.tag === tag && r.waitingForDrain === true, 30_000);
      s.disconnect();
    }
    await released(finals, "final-");
    const after = await runtimeStats(gw.url, "?gc=1");
    expect(after.activeStreams).toBe(0);
    expect(sim.stats().activeRequests).toBe(0);
    expect(after.resources.Timeout ?? 0).toBeLessThanOrEqual((baseline.resources.Timeout ?? 0) + 2);
    expect(after.heapUsedBytes - baseline.heapUsedBytes).toBeLessThan(8 * 1024 * 1024);
    console.log(
      `after the hygiene runs: ${after.activeStreams} active streams, ${sim.stats().activeRequests} upstream requests, timers ${baseline.resources.Timeout ?? 0} → ${after.resources.Timeout ?? 0}, live heap ${(baseline.heapUsedBytes / 1048576).toFixed(1)} → ${(after.heapUsedBytes / 1048576).toFixed(1)} MiB, open connections ${after.openConnections}`,
    );
  });
});
