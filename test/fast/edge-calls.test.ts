import { Code, ConnectError, createClient, createRouterTransport } from "@connectrpc/connect";
import { describe, expect, it } from "vitest";
import { ChatService } from "../../gen/sluice/v1/chat_service_pb.js";
import { createCallLayer } from "../../src/call/call-layer.js";
import { GatewayError } from "../../src/core/errors.js";
import { anthropicParam } from "../../src/edges/anthropic/anthropic-params.js";
import { geminiParam } from "../../src/edges/gemini/gemini-params.js";
import { createChatService } from "../../src/edges/grpc/chat-service.js";
import { openAiParam } from "../../src/edges/openai/http-errors.js";
import { responsesParam } from "../../src/edges/responses/responses-errors.js";
import { createHealthState } from "../../src/health/health-state.js";
import { createRoutes } from "../../src/routes.js";
import { createMemoryReplayStore } from "../../src/store/memory-replay-store.js";
import { userRequest } from "../helpers/clients.js";
import { fakePipeline, fakeTenancy, KEY } from "./helpers/fake-pipeline.js";
import { inject, sseEvents } from "./helpers/memory-http.js";

/**
 * What every edge does with one call, checked once per edge in memory (a
 * scripted pipeline and tenancy under the real call layer, the real route
 * table and edges): authentication before the body is read, the key's
 * quota headers on a refusal, the dropped-parameter notice, the client
 * leaving. The wire tests check each of these over real sockets with the
 * edges' own clients.
 */

const LIMITS = { maxRequestBytes: 1_048_576, maxJsonDepth: 32, maxRequestElements: 10_000, requestTimeoutMs: 30_000 };

function routeOver(pipeline = fakePipeline()) {
  const calls = createCallLayer({ pipeline, tenancy: fakeTenancy, replayStore: createMemoryReplayStore() });
  const route = createRoutes({
    calls,
    health: createHealthState(),
    limits: LIMITS,
    sendTimeoutMs: 10_000,
    sseKeepaliveMs: 15_000,
    console: { access: "off", assets: new Map() },
  });
  return { route, pipeline };
}

interface HttpEdge {
  readonly name: string;
  readonly path: string;
  /** Where a stream is asked for, when that is the path rather than the body (the Gemini API). */
  readonly streamPath?: string;
  readonly body: (stream: boolean) => unknown;
  readonly auth: (key: string) => Record<string, string>;
  /** The edge's error body's message. */
  readonly errorMessage: (body: unknown) => string;
  readonly droppedName: string;
}

const EDGES: readonly HttpEdge[] = [
  {
    name: "Chat Completions",
    path: "/v1/chat/completions",
    body: (stream) => ({ model: "sim", messages: [{ role: "user", content: "hi" }], stream }),
    auth: (key) => ({ authorization: `Bearer ${key}` }),
    errorMessage: (b) => (b as { error: { message: string } }).error.message,
    droppedName: openAiParam("reasoning.effort"),
  },
  {
    name: "Anthropic Messages",
    path: "/v1/messages",
    body: (stream) => ({ model: "sim", max_tokens: 100, messages: [{ role: "user", content: "hi" }], stream }),
    auth: (key) => ({ "x-api-key": key }),
    errorMessage: (b) => (b as { error: { message: string } }).error.message,
    droppedName: anthropicParam("reasoning.effort"),
  },
  {
    name: "OpenAI Responses",
    path: "/v1/responses",
    body: (stream) => ({ model: "sim", input: "hi", stream }),
    auth: (key) => ({ authorization: `Bearer ${key}` }),
    errorMessage: (b) => (b as { error: { message: string } }).error.message,
    droppedName: responsesParam("reasoning.effort"),
  },
  {
    name: "Gemini API",
    path: "/v1beta/models/sim:generateContent",
    streamPath: "/v1beta/models/sim:streamGenerateContent?alt=sse",
    body: () => ({ contents: [{ role: "user", parts: [{ text: "hi" }] }] }),
    auth: (key) => ({ "x-goog-api-key": key }),
    errorMessage: (b) => (b as { error: { message: string } }).error.message,
    droppedName: geminiParam("reasoning.effort"),
  },
];

const pathOf = (edge: HttpEdge, stream: boolean) => (stream && edge.streamPath ? edge.streamPath : edge.path);

describe.each(EDGES)("$name, in memory", (edge) => {
  it("refuses a bad key with 401 before it reads the body, and starts no stream", async () => {
    const { route, pipeline } = routeOver();
    const answer = await inject(route, { path: pathOf(edge, true), headers: edge.auth("wrong"), body: edge.body(true) });
    expect(answer.status).toBe(401);
    expect(edge.errorMessage(JSON.parse(answer.body))).toMatch(/invalid API key/);
    expect(answer.bodyRead).toBe(false);
    expect(pipeline.contexts).toHaveLength(0);
  });

  it("streams with the key's quota and the dropped parameters in the headers", async () => {
    const { route, pipeline } = routeOver();
    const answer = await inject(route, { path: pathOf(edge, true), headers: edge.auth("good"), body: edge.body(true) });
    expect(answer.status).toBe(200);
    expect(answer.headers["content-type"]).toMatch(/^text\/event-stream/);
    expect(answer.headers["x-ratelimit-remaining-requests"]).toBe("9");
    expect(answer.headers["sluice-dropped-params"]?.split(",")).toContain(edge.droppedName);
    expect(answer.body).toContain("hello ");
    expect(answer.body).toContain("world");
    expect(pipeline.contexts[0]!.principal).toBe(KEY);
    expect(answer.exchange.fields.key).toBe("team-a");
    expect(answer.exchange.code).toBe("ok");
  });

  it("answers a whole message with the same headers", async () => {
    const { route } = routeOver();
    const answer = await inject(route, { path: pathOf(edge, false), headers: edge.auth("good"), body: edge.body(false) });
    expect(answer.status).toBe(200);
    expect(answer.headers["x-ratelimit-remaining-requests"]).toBe("9");
    expect(answer.headers["sluice-dropped-params"]?.split(",")).toContain(edge.droppedName);
    expect(answer.body).toContain("hello world");
  });

  it("keeps the key's quota headers on a refusal, with a 429", async () => {
    const { route } = routeOver(fakePipeline({ refuse: new GatewayError("rate_limited", "key team-a: 10 requests per minute", { retryAfterMs: 1_500 }) }));
    const answer = await inject(route, { path: pathOf(edge, true), headers: edge.auth("good"), body: edge.body(true) });
    expect(answer.status).toBe(429);
    expect(answer.headers["x-ratelimit-remaining-requests"]).toBe("9");
    expect(answer.headers["retry-after"]).toBe("2");
    expect(edge.errorMessage(JSON.parse(answer.body))).toMatch(/10 requests per minute/);
  });

  it("aborts the pipeline when the client leaves mid-stream", async () => {
    const pipeline = fakePipeline({ hold: true });
    const { route } = routeOver(pipeline);
    const answer = await inject(route, { path: pathOf(edge, true), headers: edge.auth("good"), body: edge.body(true), leaveAfterWrites: 1 });
    await pipeline.closed(0);
    expect(pipeline.contexts[0]!.signal.aborted).toBe(true);
    expect(sseEvents(answer.body).length).toBeGreaterThan(0);
  });
});

describe("the gRPC edge, in memory (connect's router transport)", () => {
  const client = (pipeline = fakePipeline()) =>
    createClient(
      ChatService,
      createRouterTransport(({ service }) => service(ChatService, createChatService({ calls: createCallLayer({ pipeline, tenancy: fakeTenancy }), maxJsonDepth: 32 }))),
    );
  const request = userRequest("sim", "hi");

  it("refuses a bad key with UNAUTHENTICATED and starts no stream", async () => {
    const pipeline = fakePipeline();
    const error = await (async () => {
      for await (const _ of client(pipeline).streamChat(request, { headers: { authorization: "Bearer wrong" } })) {
        // nothing arrives
      }
    })().catch((e: unknown) => ConnectError.from(e));
    expect(error?.code).toBe(Code.Unauthenticated);
    expect(pipeline.contexts).toHaveLength(0);
  });

  it("sends the key's quota and the dropped parameters as response metadata, and the deltas", async () => {
    const headers: Headers[] = [];
    const texts: string[] = [];
    for await (const message of client().streamChat(request, { headers: { authorization: "Bearer good" }, onHeader: (h) => headers.push(h) })) {
      if (message.delta.case === "text") texts.push(message.delta.value.text);
    }
    expect(headers[0]!.get("x-ratelimit-remaining-requests")).toBe("9");
    expect(headers[0]!.get("sluice-dropped-params")).toBe("reasoning.effort");
    expect(texts.join("")).toBe("hello world");
  });

  it("keeps the quota metadata on a refusal", async () => {
    const headers: Headers[] = [];
    const pipeline = fakePipeline({ refuse: new GatewayError("rate_limited", "key team-a: 10 requests per minute") });
    const error = await (async () => {
      for await (const _ of client(pipeline).streamChat(request, { headers: { authorization: "Bearer good" }, onHeader: (h) => headers.push(h) })) {
        // refused
      }
    })().catch((e: unknown) => ConnectError.from(e));
    expect(error?.code).toBe(Code.ResourceExhausted);
    expect(headers[0]?.get("x-ratelimit-remaining-requests") ?? error?.metadata.get("x-ratelimit-remaining-requests")).toBe("9");
  });

  it("aborts the pipeline when the client cancels", async () => {
    const pipeline = fakePipeline({ hold: true });
    const controller = new AbortController();
    const seen: string[] = [];
    const error = await (async () => {
      for await (const message of client(pipeline).streamChat(request, { headers: { authorization: "Bearer good" }, signal: controller.signal })) {
        seen.push(message.delta.case ?? "");
        if (message.delta.case === "usage") controller.abort();
      }
    })().catch((e: unknown) => ConnectError.from(e));
    expect(error?.code).toBe(Code.Canceled);
    await pipeline.closed(0);
    expect(pipeline.contexts[0]!.signal.aborted).toBe(true);
    expect(seen).toContain("usage");
  });
});

describe("paths under /v1/ that no edge serves", () => {
  it("answer 404 in the format of the SDK that asked: Anthropic's under /v1/messages, OpenAI's elsewhere", async () => {
    const { route } = routeOver();
    const batches = await inject(route, { path: "/v1/messages/batches", headers: { "x-api-key": "good" }, body: {} });
    expect(batches.status).toBe(404);
    expect(JSON.parse(batches.body)).toMatchObject({ type: "error", error: { type: "not_found_error" } });
    const files = await inject(route, { method: "GET", path: "/v1/files" });
    expect(files.status).toBe(404);
    expect(JSON.parse(files.body)).toMatchObject({ error: { type: "invalid_request_error", code: "not_found" } });
  });

  it("answer 404 in Google's shape under /v1beta/", async () => {
    const { route } = routeOver();
    const files = await inject(route, { method: "GET", path: "/v1beta/files", headers: { "x-goog-api-key": "good" } });
    expect(files.status).toBe(404);
    expect(JSON.parse(files.body)).toMatchObject({ error: { code: 404, status: "NOT_FOUND" } });
  });
});
