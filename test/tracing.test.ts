import { once } from "node:events";
import { createServer, type IncomingMessage } from "node:http";
import type { AddressInfo } from "node:net";
import { SpanKind } from "@opentelemetry/api";
import { InMemorySpanExporter, type ReadableSpan } from "@opentelemetry/sdk-trace";
import OpenAI from "openai";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type Simulator, startSimulator } from "../src/simulator/server.js";
import { chatClient, collect, transports, userRequest } from "./helpers/clients.js";
import { startGatewayProcess } from "./helpers/gateway-process.js";
import { baseUrlFor, type Harness, startHarness } from "./helpers/harness.js";

const SECRET = "sk-tracing-secret-0123456789abcdef";
const PROMPT = "PROMPT-MARKER-7f3a";
const CLIENT_TRACE = "4bf92f3577b34da6a3ce929d0e0e4736";
const FACADE_TRACE = "5c0a3f3577b34da6a3ce929d0e0e4737";
const CLIENT_SPAN = "00f067aa0ba902b7";
const traceparent = `00-${CLIENT_TRACE}-${CLIENT_SPAN}-01`;

const exporter = new InMemorySpanExporter();
let h: Harness;
beforeAll(async () => {
  h = await startHarness({
    spanExporter: exporter,
    env: { PRIMARY_KEY: SECRET },
    routing: (sim) => ({
      providers: {
        primary: { kind: "openai", baseUrl: baseUrlFor(sim, "openai"), apiKeyEnv: "PRIMARY_KEY", breaker: { failures: 10_000 } },
        backup: { kind: "gemini", baseUrl: baseUrlFor(sim, "gemini") },
      },
      models: {
        sim: { provider: "primary", model: "sim-1?tokens=3" },
        failover: {
          targets: [
            { provider: "primary", model: "sim-1?fail=status&status=503&script=trace-fo" },
            { provider: "backup", model: "sim-1?tokens=2" },
          ],
        },
        hedged: {
          hedge: { afterMs: 100 },
          targets: [
            { provider: "primary", model: "sim-1?ttft_ms=60000&script=trace-slow" },
            { provider: "backup", model: "sim-1?tokens=2" },
          ],
        },
      },
    }),
  });
});
afterAll(() => h.close());

/** The spans of one request, once it is over: its access line is written when its response closed, after every span ended. */
async function spansOf(requestId: string): Promise<ReadableSpan[]> {
  await h.waitForLog((l) => l.event === "access" && l.requestId === requestId);
  await h.sluice.telemetry.tracing.flush();
  const server = exporter.getFinishedSpans().find((s) => s.attributes["sluice.request_id"] === requestId)!;
  return exporter.getFinishedSpans().filter((s) => s.spanContext().traceId === server.spanContext().traceId);
}

const client = () => chatClient(transports(h.url)["grpc (connect-node, h2)"]!);

describe("traces", () => {
  it("the client's traceparent reaches the provider with the same trace id; a SERVER span and a CLIENT span per attempt", async () => {
    const messages = await collect(client().streamChat(userRequest("sim", `${PROMPT}\n#sim tag=trace-grpc`), { headers: { traceparent, "x-request-id": "t-grpc" } }));
    const record = h.sim.records.all().find((r) => r.tag === "trace-grpc")!;
    expect(record.traceparent?.split("-")[1]).toBe(CLIENT_TRACE);
    const spans = await spansOf("t-grpc");
    const server = spans.find((s) => s.kind === SpanKind.SERVER)!;
    expect(server.name).toBe("sluice.v1.ChatService/StreamChat");
    expect(server.parentSpanContext?.spanId).toBe(CLIENT_SPAN);
    const attempt = spans.find((s) => s.kind === SpanKind.CLIENT)!;
    expect(attempt.name).toBe("chat sim-1?tokens=3");
    expect(attempt.parentSpanContext?.spanId).toBe(server.spanContext().spanId);
    // The upstream request carried the attempt span as its parent.
    expect(record.traceparent?.split("-")[2]).toBe(attempt.spanContext().spanId);
    const start = messages[0]!.delta;
    expect(attempt.attributes).toMatchObject({
      "gen_ai.operation.name": "chat",
      "gen_ai.provider.name": "openai",
      "gen_ai.request.model": "sim-1?tokens=3",
      "gen_ai.response.model": "sim-1?tokens=3",
      "gen_ai.response.id": start.case === "start" ? start.value.responseId : "",
      "gen_ai.response.finish_reasons": ["stop"],
      "gen_ai.usage.output_tokens": 3,
      "server.address": "127.0.0.1",
      "sluice.attempt.outcome": "committed",
    });
    expect(attempt.events.map((e) => e.name)).toContain("gen_ai.first_token");
  });

  it("the facade: the same, and the response names the trace (traceresponse)", async () => {
    const res = await fetch(`${h.url}/v1/chat/completions`, {
      method: "POST",
      headers: { "content-type": "application/json", traceparent: `00-${FACADE_TRACE}-${CLIENT_SPAN}-01`, "x-request-id": "t-facade" },
      body: JSON.stringify({ model: "sim", max_tokens: 50, temperature: 0.5, messages: [{ role: "user", content: `${PROMPT}\n#sim tag=trace-facade` }] }),
    });
    await res.json();
    expect(res.headers.get("traceresponse")?.split("-")[1]).toBe(FACADE_TRACE);
    const spans = await spansOf("t-facade");
    expect(spans.find((s) => s.kind === SpanKind.SERVER)!.name).toBe("POST /v1/chat/completions");
    expect(spans.find((s) => s.kind === SpanKind.CLIENT)!.attributes).toMatchObject({ "gen_ai.request.max_tokens": 50, "gen_ai.request.temperature": 0.5 });
    expect(
      h.sim.records
        .all()
        .find((r) => r.tag === "trace-facade")!
        .traceparent?.split("-")[1],
    ).toBe(FACADE_TRACE);
  });

  it("a failover shows both attempts as sibling spans with their outcomes", async () => {
    await collect(client().streamChat(userRequest("failover", "hi"), { headers: { "x-request-id": "t-failover" } }));
    const attempts = (await spansOf("t-failover")).filter((s) => s.kind === SpanKind.CLIENT).sort((a, b) => Number(a.attributes["sluice.attempt.index"]) - Number(b.attributes["sluice.attempt.index"]));
    expect(attempts.map((s) => [s.attributes["gen_ai.provider.name"], s.attributes["sluice.attempt.outcome"], s.attributes["error.type"]])).toEqual([
      ["openai", "failed", "upstream_unavailable"],
      ["gcp.gemini", "committed", undefined],
    ]);
    expect(new Set(attempts.map((s) => s.parentSpanContext?.spanId)).size).toBe(1);
  });

  it("a hedge that wins and the attempt that lost it", async () => {
    await collect(client().streamChat(userRequest("hedged", "hi"), { headers: { "x-request-id": "t-hedge" } }));
    const attempts = (await spansOf("t-hedge")).filter((s) => s.kind === SpanKind.CLIENT);
    expect(attempts.map((s) => [s.attributes["sluice.attempt.hedge"], s.attributes["sluice.attempt.outcome"]]).sort()).toEqual([
      [false, "lost_hedge"],
      [true, "committed"],
    ]);
  });

  it("no prompt, completion, key or header value in any span unless content capture is on", () => {
    const everything = JSON.stringify(exporter.getFinishedSpans().map((s) => ({ name: s.name, attributes: s.attributes, events: s.events })));
    expect(everything).not.toContain(PROMPT);
    expect(everything).not.toContain(SECRET);
    expect(everything).not.toContain("authorization");
  });
});

describe("content capture, when configured", () => {
  const captured = new InMemorySpanExporter();
  let c: Harness;
  beforeAll(async () => {
    c = await startHarness({
      spanExporter: captured,
      models: { sim: "sim-1?tokens=2&seed=4", resident: "sim-1?tokens=2&seed=4", guarded: "sim-1?tokens=2&seed=4" },
      provider: { local: true },
      aliasOptions: { resident: { localOnly: true }, guarded: { pii: { mode: "local-only" } } },
      telemetry: { tracing: { captureContent: true } },
    });
  });
  afterAll(() => c.close());

  it("puts the messages and the answer on the attempt span", async () => {
    await collect(chatClient(transports(c.url)["grpc (connect-node, h2)"]!).streamChat(userRequest("sim", PROMPT), { headers: { "x-request-id": "t-capture" } }));
    await c.waitForLog((l) => l.event === "access" && l.requestId === "t-capture");
    await c.sluice.telemetry.tracing.flush();
    const attempt = captured.getFinishedSpans().find((s) => s.kind === SpanKind.CLIENT)!;
    expect(String(attempt.attributes["gen_ai.input.messages"])).toContain(PROMPT);
    expect(String(attempt.attributes["gen_ai.output.messages"])).toContain('"role":"assistant"');
  });

  it("puts neither on the span of a call kept local (a localOnly alias, a local-only PII policy with or without findings)", async () => {
    const calls = [
      ["resident", PROMPT, "t-resident"],
      ["guarded", PROMPT, "t-guarded"],
      ["guarded", `${PROMPT} mail erin.local@example.com`, "t-guarded-pii"],
    ] as const;
    for (const [alias, prompt, id] of calls) {
      await collect(chatClient(transports(c.url)["grpc (connect-node, h2)"]!).streamChat(userRequest(alias, prompt), { headers: { "x-request-id": id } }));
      await c.waitForLog((l) => l.event === "access" && l.requestId === id);
    }
    await c.sluice.telemetry.tracing.flush();
    const local = captured.getFinishedSpans().filter((s) => s.kind === SpanKind.CLIENT && ["resident", "guarded"].includes(String(s.attributes["sluice.alias"])));
    expect(local).toHaveLength(3);
    const everything = JSON.stringify(local.map((s) => ({ attributes: s.attributes, events: s.events })));
    expect(everything).not.toContain(PROMPT);
    expect(everything).not.toContain("erin.local");
    expect(everything).not.toContain("gen_ai.input.messages");
    expect(everything).not.toContain("gen_ai.output.messages");
  });
});

describe("OTLP/HTTP export to a collector", () => {
  let sim: Simulator;
  const bodies: string[] = [];
  let received: () => void;
  const exported = new Promise<void>((resolve) => (received = resolve));
  const collector = createServer((req: IncomingMessage, res) => {
    let body = "";
    req.on("data", (d: Buffer) => (body += d.toString()));
    req.on("end", () => {
      bodies.push(`${req.url} ${req.headers["content-type"]} ${body}`);
      res.writeHead(200, { "content-type": "application/json" });
      res.end("{}");
      if (body.includes("chat sim-1")) received();
    });
  });
  beforeAll(async () => {
    sim = await startSimulator();
    collector.listen(0, "127.0.0.1");
    await once(collector, "listening");
  });
  afterAll(async () => {
    collector.close();
    await sim.close();
  });

  it("exports the spans of a stream to OTEL_EXPORTER_OTLP_ENDPOINT, without keys or prompts", async () => {
    const endpoint = `http://127.0.0.1:${(collector.address() as AddressInfo).port}`;
    const gw = await startGatewayProcess(
      { providers: { sim: { kind: "openai", baseUrl: sim.openAiBaseUrl, apiKeyEnv: "SIM_KEY" } }, models: { sim: { provider: "sim", model: "sim-1?tokens=2" } } },
      { env: { ...process.env, OTEL_EXPORTER_OTLP_ENDPOINT: endpoint, OTEL_SERVICE_NAME: "sluice-under-test", SIM_KEY: SECRET } },
    );
    const openai = new OpenAI({ baseURL: `${gw.url}/v1`, apiKey: "unused", maxRetries: 0 });
    await openai.chat.completions.create({ model: "sim", messages: [{ role: "user", content: PROMPT }] });
    // Shutdown flushes what the batch processor holds.
    expect(await gw.stop()).toBe(0);
    await exported;
    const all = bodies.join("\n");
    expect(all).toContain("/v1/traces");
    expect(all).toContain("sluice-under-test");
    expect(all).toContain("POST /v1/chat/completions");
    expect(all).not.toContain(PROMPT);
    expect(all).not.toContain(SECRET);
  });
});

describe("OTEL_BSP_* reach the gateway's batch processor", () => {
  let sim: Simulator;
  /** Spans per OTLP export, and each export's span names, in arrival order. */
  const exports: string[][] = [];
  let serverSpanArrived: () => void;
  const serverSpan = new Promise<void>((resolve) => (serverSpanArrived = resolve));
  const collector = createServer((req: IncomingMessage, res) => {
    let body = "";
    req.on("data", (d: Buffer) => (body += d.toString()));
    req.on("end", () => {
      res.writeHead(200, { "content-type": "application/json" });
      res.end("{}");
      const { resourceSpans } = JSON.parse(body) as { resourceSpans: Array<{ scopeSpans: Array<{ spans: Array<{ name: string }> }> }> };
      const names = resourceSpans.flatMap((r) => r.scopeSpans.flatMap((s) => s.spans.map((span) => span.name)));
      exports.push(names);
      if (names.includes("POST /v1/chat/completions")) serverSpanArrived();
    });
  });
  beforeAll(async () => {
    sim = await startSimulator();
    collector.listen(0, "127.0.0.1");
    await once(collector, "listening");
  });
  afterAll(async () => {
    collector.close();
    await sim.close();
  });

  it("batches of one span go out as each span ends, though the schedule delay is ten minutes", async () => {
    const endpoint = `http://127.0.0.1:${(collector.address() as AddressInfo).port}`;
    const gw = await startGatewayProcess(
      { providers: { sim: { kind: "openai", baseUrl: sim.openAiBaseUrl } }, models: { sim: { provider: "sim", model: "sim-1?tokens=2" } } },
      { env: { ...process.env, OTEL_EXPORTER_OTLP_ENDPOINT: endpoint, OTEL_BSP_MAX_EXPORT_BATCH_SIZE: "1", OTEL_BSP_SCHEDULE_DELAY: "600000" } },
    );
    try {
      const openai = new OpenAI({ baseURL: `${gw.url}/v1`, apiKey: "unused", maxRetries: 0 });
      await openai.chat.completions.create({ model: "sim", messages: [{ role: "user", content: "hi" }] });
      // Still running: only a batch filled at one span can have sent it. Ignored, the
      // variables leave 512 spans a batch and 5 s, and the request's spans come in one export.
      await serverSpan;
      expect(exports.length).toBeGreaterThanOrEqual(2);
      expect(exports.map((names) => names.length)).toEqual(exports.map(() => 1));
      expect(exports.flat()).toContain("chat sim-1?tokens=2");
    } finally {
      expect(await gw.stop()).toBe(0);
    }
  });
});
