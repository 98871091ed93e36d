import { Code } from "@connectrpc/connect";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { StreamChatResponse } from "../gen/sluice/v1/chat_service_pb.js";
import { simulatedText } from "../src/simulator/text.js";
import { adminClient } from "./helpers/admin.js";
import { type ChatClient, chatClient, collect, rpcFailure, streamAndDrop, textOf, transports, userRequest } from "./helpers/clients.js";
import { FAR_TIMEOUTS, type Harness, startHarness } from "./helpers/harness.js";
import { scrape } from "./helpers/prometheus.js";
import { dropPrefix, SHARED_REDIS_URL, testPrefix } from "./helpers/redis.js";
import { tenancyEvents } from "./helpers/tenancy-events.js";

/**
 * However a resumable stream ends (read to the end, cut and resumed, cut
 * and abandoned, cancelled), its end runs once inside the gateway: the
 * active gauge falls back, the stream is counted and charged, its
 * concurrency slot and budget reservation are released. The key allows one
 * stream at a time, so a slot still held shows as a refused next call.
 */
const KEY = "sk-test-resume-ends-5b7d9f1a3c2e4068";
const ADMIN_KEY = "sk-test-resume-ends-admin-8c0e2a4f6b1d3957";
/** One dollar per million input tokens and two per million output. */
const PRICE = { inputPerMTok: 1, outputPerMTok: 2 };
const GRACE_MS = 150;

const resumable = { streamOptions: { resumable: true } };
const responseIdOf = (messages: readonly StreamChatResponse[]) => (messages[0]?.delta.case === "start" ? messages[0].delta.value.responseId : "");

describe.each(["in-process", "redis"] as const)("a resumable stream's end, %s store", (store) => {
  const prefix = testPrefix(`resume-ends-${store}`);
  const events = tenancyEvents();
  let h: Harness;
  let client: ChatClient;
  let ids = 0;

  beforeAll(async () => {
    h = await startHarness({
      routing: (sim) => ({
        providers: { sim: { kind: "openai", baseUrl: sim.openAiBaseUrl, breaker: { failures: 10_000 }, timeouts: FAR_TIMEOUTS } },
        models: { sim: { provider: "sim", model: "sim-1", price: PRICE } },
      }),
      env: { RESUME_KEY: KEY, ADMIN_KEY },
      auth: { adminKeyEnv: "ADMIN_KEY", keys: [{ name: "resumer", keyEnv: "RESUME_KEY", limits: { concurrentStreams: 1 }, budget: { usd: 10, period: "month" } }] },
      resume: { detachGraceMs: GRACE_MS },
      ...(store === "redis" ? { store: { redis: { url: SHARED_REDIS_URL, prefix, failMode: "closed", timeoutMs: 5_000 } } } : {}),
      observer: events.observer,
    });
    client = chatClient(transports(h.url)["grpc (connect-node, h2)"]!);
  });
  afterAll(async () => {
    await h.close();
    if (store === "redis") await dropPrefix(prefix);
  });

  const headers = (requestId: string) => ({ authorization: `Bearer ${KEY}`, "x-request-id": requestId });
  const requestId = (name: string) => `${store}-${name}-${++ids}`;

  /** The stream ended inside the gateway exactly once: gauge back to 0, counted, charged once, slot and reservation free. */
  async function expectEnded(id: string, outcome: "completed" | "canceled") {
    expect(await h.sluice.registry.idle(15_000)).toBe(true);
    const record = await events.recorded(id);
    expect(record.outcome).toBe(outcome);
    expect(record.costMicros).toBeGreaterThan(0);
    expect(events.usage.filter((e) => e.record.requestId === id)).toHaveLength(1);
    const metrics = await scrape(`${h.url}/metrics`);
    expect(Number(metrics.families.find((f) => f.name === "sluice_streams_active")!.metrics[0]!.value)).toBe(0);
    const ended = metrics.families.find((f) => f.name === "sluice_streams_total")!.metrics.filter((m) => m.labels?.sluice_outcome === (outcome === "completed" ? "ok" : "canceled") || m.labels?.sluice_outcome === outcome);
    expect(ended.reduce((sum, m) => sum + Number(m.value), 0)).toBeGreaterThan(0);
    const usage = await adminClient(h.url, ADMIN_KEY).getUsage({ name: "resumer" });
    expect(usage.reservedUsdMicros).toBe(0n);
    // concurrentStreams: 1 — a slot still held would refuse this call.
    const nextId = requestId("next");
    const next = await collect(client.streamChat(userRequest("sim", "#sim tokens=2"), { headers: headers(nextId) }));
    expect(next.at(-1)!.delta.case).toBe("finish");
    expect(await h.sluice.registry.idle(15_000)).toBe(true);
    await events.recorded(nextId);
  }

  it("read to its finish by its own client (gRPC)", async () => {
    const id = requestId("read");
    const messages = await collect(client.streamChat(userRequest("sim", "#sim tokens=8", resumable), { headers: headers(id) }));
    expect(textOf(messages)).toBe(simulatedText(1, 8));
    expect(messages.at(-1)!.delta.case).toBe("finish");
    await expectEnded(id, "completed");
  });

  it("read to [DONE] by its own client (Chat Completions)", async () => {
    const id = requestId("facade");
    const res = await fetch(`${h.url}/v1/chat/completions`, {
      method: "POST",
      headers: { "content-type": "application/json", ...headers(id) },
      body: JSON.stringify({ model: "sim", stream: true, stream_options: { resumable: true }, messages: [{ role: "user", content: "#sim tokens=8" }] }),
    });
    expect(res.status).toBe(200);
    expect(await res.text()).toContain("data: [DONE]");
    await expectEnded(id, "completed");
  });

  it("cut and resumed to its finish", async () => {
    const id = requestId("resumed");
    const tag = `resume-ends-${store}-resumed`;
    const first = await streamAndDrop(client, userRequest("sim", `#sim tokens=12 hold_at=6 tag=${tag}`, resumable), 3, headers(id));
    await h.sim.records.waitFor((r) => r.tag === tag && r.heldAt !== undefined, 30_000);
    const rest = collect(client.resumeStream({ responseId: responseIdOf(first), afterSequence: first.at(-1)!.sequence }, { headers: { authorization: `Bearer ${KEY}` } }));
    h.sim.records.release(tag);
    const all = [...first, ...(await rest)];
    expect(textOf(all)).toBe(simulatedText(1, 12));
    expect(all.at(-1)!.delta.case).toBe("finish");
    await expectEnded(id, "completed");
  });

  it("cut and abandoned past the detach grace", async () => {
    const id = requestId("abandoned");
    const tag = `resume-ends-${store}-abandoned`;
    const first = await streamAndDrop(client, userRequest("sim", `#sim tokens=2000 fail=stall fail_at=3 tag=${tag}`, resumable), 3, headers(id));
    await h.waitForLog((l) => l.event === "resume.grace_expired" && l.responseId === responseIdOf(first));
    await expectEnded(id, "canceled");
  });

  it("cancelled by CancelStream while its client reads", async () => {
    const id = requestId("cancelled");
    const tag = `resume-ends-${store}-cancelled`;
    const stream = client.streamChat(userRequest("sim", `#sim tokens=2000 fail=stall fail_at=3 tag=${tag}`, resumable), { headers: headers(id) })[Symbol.asyncIterator]();
    const messages: StreamChatResponse[] = [];
    while (messages.filter((m) => m.delta.case === "text").length < 3) messages.push((await stream.next()).value as StreamChatResponse);
    await client.cancelStream({ responseId: responseIdOf(messages) }, { headers: { authorization: `Bearer ${KEY}` } });
    const rest = (async () => {
      for (let next = await stream.next(); !next.done; next = await stream.next()) messages.push(next.value);
    })();
    expect((await rpcFailure(rest)).code).toBe(Code.Canceled);
    await expectEnded(id, "canceled");
  });
});
