import { connect as h2connect } from "node:http2";
import { toBinary } from "@bufbuild/protobuf";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { StreamChatRequestSchema } from "../gen/sluice/v1/chat_service_pb.js";
import { chatClient, collect, transports, userRequest } from "./helpers/clients.js";
import { type Harness, startHarness } from "./helpers/harness.js";
import { grpcFrame } from "./helpers/raw.js";

let h: Harness;
beforeAll(async () => {
  // Only the paused-stream test needs a short total timeout; served streams
  // get the default, so a loaded machine cannot turn them into timeouts.
  h = await startHarness({
    models: { sim: "sim-1?tokens=3", "sim-short-total": { model: "sim-1?tokens=3", timeouts: { totalMs: 500 } } },
    limits: { maxRequestBytes: 4096 },
  });
});
afterAll(() => h.close());

let ids = 0;
const nextId = () => `acc-${++ids}`;
const accessLine = (requestId: string) => h.waitForLog((l) => l.event === "access" && l.requestId === requestId);

describe("one access line per request, including those refused before routing", () => {
  it("gRPC, unknown model", async () => {
    const requestId = nextId();
    const client = chatClient(transports(h.url)["grpc (connect-node, h2)"]!);
    await collect(client.streamChat(userRequest("nope", "hi"), { headers: { "x-request-id": requestId } })).catch(() => undefined);
    expect(await accessLine(requestId)).toMatchObject({ edge: "grpc", route: "/sluice.v1.ChatService/StreamChat", status: 200, code: "not_found", durationMs: expect.any(Number) });
  });

  it("Connect over HTTP/1.1, invalid request", async () => {
    const requestId = nextId();
    const client = chatClient(transports(h.url)["connect (connect-node, HTTP/1.1)"]!);
    await collect(client.streamChat(userRequest("", "hi"), { headers: { "x-request-id": requestId } })).catch(() => undefined);
    expect(await accessLine(requestId)).toMatchObject({ edge: "connect", code: "invalid_argument" });
  });

  const facade: Array<[string, string, RequestInit, number, string]> = [
    ["unknown model", "/v1/chat/completions", { method: "POST", body: JSON.stringify({ model: "nope", messages: [{ role: "user", content: "x" }] }) }, 404, "unknown_model"],
    ["bad JSON", "/v1/chat/completions", { method: "POST", body: "{not json" }, 400, "invalid_request"],
    ["body over the limit", "/v1/chat/completions", { method: "POST", body: "x".repeat(10_000) }, 413, "payload_too_large"],
    ["no such route", "/v1/assistants", { method: "POST", body: "{}" }, 404, "not_found"],
    ["outside every edge", "/nothing/here", { method: "GET" }, 404, "not_found"],
  ];
  for (const [name, path, init, status, code] of facade) {
    it(`HTTP, ${name}: ${status}`, async () => {
      const requestId = nextId();
      const res = await fetch(`${h.url}${path}`, { ...init, headers: { "content-type": "application/json", "x-request-id": requestId } });
      expect(res.status).toBe(status);
      expect(res.headers.get("x-request-id")).toBe(requestId);
      expect(await accessLine(requestId)).toMatchObject({ status, code, durationMs: expect.any(Number) });
    });
  }

  it("health probes answered 200 are debug lines (one every few seconds from every balancer); other requests info", async () => {
    const [healthz, readyz, other] = [nextId(), nextId(), nextId()];
    expect((await fetch(`${h.url}/healthz`, { headers: { "x-request-id": healthz } })).status).toBe(200);
    expect((await fetch(`${h.url}/readyz`, { headers: { "x-request-id": readyz } })).status).toBe(200);
    await fetch(`${h.url}/nothing/here`, { headers: { "x-request-id": other } });
    expect(await accessLine(healthz)).toMatchObject({ edge: "health", route: "/healthz", level: 20 });
    expect(await accessLine(readyz)).toMatchObject({ edge: "health", route: "/readyz", level: 20 });
    expect(await accessLine(other)).toMatchObject({ level: 30 });
  });

  it("a served stream: one access line with alias, target, attempts, TTFT, tokens and trace ids", async () => {
    const requestId = nextId();
    await collect(chatClient(transports(h.url)["grpc (connect-node, h2)"]!).streamChat(userRequest("sim", "one two"), { headers: { "x-request-id": requestId } }));
    expect(await accessLine(requestId)).toMatchObject({
      edge: "grpc",
      code: "ok",
      alias: "sim",
      provider: "simulator",
      model: "sim-1?tokens=3",
      attempts: 1,
      inputTokens: 2,
      outputTokens: 3,
      ttftMs: expect.any(Number),
      durationMs: expect.any(Number),
      trace_id: expect.stringMatching(/^[0-9a-f]{32}$/),
      span_id: expect.stringMatching(/^[0-9a-f]{16}$/),
    });
    expect(h.logs().filter((l) => l.event === "access" && l.requestId === requestId)).toHaveLength(1);
    expect(h.logs().filter((l) => l.event === "stream.end" && l.requestId === requestId)).toMatchObject([{ outcome: "completed" }]);
  });
});

describe("stream.end logs the true cause", () => {
  it("a total timeout while the client holds the stream paused is logged as the timeout, not as the cancel that follows", async () => {
    const requestId = nextId();
    const session = h2connect(h.url);
    session.on("error", () => undefined);
    const stream = session.request({
      ":method": "POST",
      ":path": "/sluice.v1.ChatService/StreamChat",
      "content-type": "application/grpc",
      te: "trailers",
      "x-request-id": requestId,
    });
    stream.on("error", () => undefined);
    stream.end(grpcFrame(toBinary(StreamChatRequestSchema, userRequest("sim-short-total", "#sim tokens=3000 token_chars=2000 tag=paused-total"))));
    // The first message, or, on a machine too loaded to send one within the 500 ms, the end of
    // a response with no message: the timeout must be logged as such either way.
    await new Promise<void>((resolve) => {
      stream.once("data", () => resolve());
      stream.once("trailers", () => resolve());
      stream.once("close", () => resolve());
    });
    stream.pause();
    // The total timeout (500 ms) ends the upstream exchange while the client reads nothing.
    const end = await h.waitForLog((l) => l.event === "stream.end" && l.requestId === requestId);
    expect(end).toMatchObject({ outcome: "upstream_timeout", errorCode: "upstream_timeout" });
    session.destroy();
    await accessLine(requestId);
    expect(h.logs().filter((l) => l.event === "stream.end" && l.requestId === requestId)).toHaveLength(1);
    expect(h.sluice.registry.active).toBe(0);
  });

  it("an upstream status failure is logged with its status and cause", async () => {
    const requestId = nextId();
    await collect(chatClient(transports(h.url)["grpc (connect-node, h2)"]!).streamChat(userRequest("sim", "#sim fail=status status=503"), { headers: { "x-request-id": requestId } })).catch(() => undefined);
    const end = await h.waitForLog((l) => l.event === "stream.end" && l.requestId === requestId);
    expect(end).toMatchObject({ outcome: "upstream_unavailable", upstreamStatus: 503, cause: "Error: upstream status 503" });
  });
});
