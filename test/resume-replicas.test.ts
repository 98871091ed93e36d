import { Code } from "@connectrpc/connect";
import { createGrpcTransport } from "@connectrpc/connect-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { StreamChatResponse } from "../gen/sluice/v1/chat_service_pb.js";
import { sha256Hex } from "../src/config/key-hash.js";
import type { ConfigInput } from "../src/config/schema.js";
import { streamSlot } from "../src/resume/sealed-batches.js";
import { type Simulator, startSimulator } from "../src/simulator/server.js";
import { simulatedText } from "../src/simulator/text.js";
import { type ChatClient, chatClient, collect, rpcFailure, streamAndDrop, textOf, userRequest } from "./helpers/clients.js";
import { type GatewayProcess, startGatewayProcess } from "./helpers/gateway-process.js";
import { FAR_TIMEOUTS } from "./helpers/harness.js";
import { dropPrefix, inspector, keysUnder, SHARED_REDIS_URL, testPrefix } from "./helpers/redis.js";
import { contentOfEvents, readFacadeEvents } from "./helpers/sse-events.js";

const OWNER_KEY = "sk-test-resume-owner-5e7a9c1b3d";
const OTHER_KEY = "sk-test-resume-other-2f4a6c8e0b";
const prefix = testPrefix("resume");

let sim: Simulator;
/** A and B keep detached streams for a minute; C lets go after 50 ms and forgets them after 1 s. */
let a: GatewayProcess;
let b: GatewayProcess;
let c: GatewayProcess;

function configFor(resume: ConfigInput["resume"]): ConfigInput {
  return {
    log: { level: "debug" },
    providers: { simulator: { kind: "openai", baseUrl: sim.openAiBaseUrl, timeouts: FAR_TIMEOUTS, breaker: { failures: 10_000 } } },
    models: { sim: { provider: "simulator", model: "sim-1" } },
    auth: {
      keys: [
        { name: "owner", sha256: sha256Hex(OWNER_KEY) },
        { name: "other", sha256: sha256Hex(OTHER_KEY) },
      ],
    },
    store: { redis: { url: SHARED_REDIS_URL, prefix, failMode: "closed", timeoutMs: 5_000, replicas: 3 } },
    resume,
  };
}

beforeAll(async () => {
  sim = await startSimulator();
  [a, b, c] = await Promise.all([startGatewayProcess(configFor({})), startGatewayProcess(configFor({})), startGatewayProcess(configFor({ detachGraceMs: 50, retentionMs: 1_000 }))]);
  // The Redis connections come up after the listener: wait for them before the first request.
  await Promise.all([a, b, c].flatMap((g) => [g.waitForLine((l) => l.event === "store.connected"), g.waitForLine((l) => l.event === "resume.connected")]));
});

afterAll(async () => {
  await Promise.all([a, b, c].filter(Boolean).map((g) => g.stop()));
  await sim?.close();
  await dropPrefix(prefix);
});

const bearer = (key: string) => ({ headers: { authorization: `Bearer ${key}` } });
const client = (g: GatewayProcess): ChatClient => chatClient(createGrpcTransport({ baseUrl: g.url }));
const responseIdOf = (messages: readonly StreamChatResponse[]) => (messages[0]?.delta.case === "start" ? messages[0].delta.value.responseId : "");

/** Streams `prompt` resumably on `g` as the owner and drops the connection on the `after`-th text delta. */
const startAndDrop = (g: GatewayProcess, prompt: string, after: number) => streamAndDrop(client(g), userRequest("sim", prompt, { streamOptions: { resumable: true } }), after, bearer(OWNER_KEY).headers);

describe("resumable streams across gateway processes sharing one Redis", () => {
  it("continue on replica B exactly where the client left replica A: the concatenation is the uninterrupted answer, for every concurrent reader", async () => {
    const direct = textOf(await collect(client(a).streamChat(userRequest("sim", "#sim tokens=40"), bearer(OWNER_KEY))));
    const first = await startAndDrop(a, "#sim tokens=40 hold_at=15 tag=replicas-resume", 10);
    expect(first.filter((m) => m.delta.case === "text")).toHaveLength(10);
    await sim.records.waitFor((r) => r.tag === "replicas-resume" && r.heldAt !== undefined, 30_000);
    const resume = (g: GatewayProcess) => collect(client(g).resumeStream({ responseId: responseIdOf(first), afterSequence: first.at(-1)!.sequence }, bearer(OWNER_KEY)));
    const resumed = Promise.all([resume(b), resume(c)]);
    sim.records.release("replicas-resume");
    const [rest, other] = await resumed;
    expect(other).toEqual(rest);
    const all = [...first, ...rest];
    expect(all.map((m) => Number(m.sequence))).toEqual(all.map((_, i) => i));
    expect(textOf(all)).toBe(direct);
    expect(direct).toBe(simulatedText(1, 40));
    expect(all.at(-1)!.delta.case).toBe("finish");
    expect((await sim.records.waitFor((r) => r.tag === "replicas-resume" && r.endedAt !== undefined, 30_000)).outcome).toBe("completed");
  });

  it("keeps no answer and no stream id readable in Redis: batches are sealed under the id, keys named by its digest", async () => {
    const secret = "marmalade-orbit-quince";
    const messages = await collect(client(a).streamChat(userRequest("sim", `${secret}\n#sim echo=1`, { streamOptions: { resumable: true } }), bearer(OWNER_KEY)));
    expect(textOf(messages)).toContain(secret);
    const id = responseIdOf(messages);
    const resumed = await collect(client(b).resumeStream({ responseId: id }, bearer(OWNER_KEY)));
    expect(textOf(resumed)).toBe(textOf(messages));
    const redis = await inspector();
    try {
      const keys = await keysUnder(redis, prefix);
      expect(keys.some((k) => k.includes(streamSlot(id)))).toBe(true);
      for (const key of keys) {
        const type = await redis.type(key);
        const value = type === "string" ? await redis.get(key) : type === "stream" ? JSON.stringify(await redis.xRange(key, "-", "+")) : type === "hash" ? JSON.stringify(await redis.hGetAll(key)) : "";
        expect(`${key} ${value}`).not.toContain(secret);
        expect(`${key} ${value}`).not.toContain(id.slice("resp_".length));
        // The echo comes back three characters a delta, so the marker alone would not show a plaintext log: each batch must be opaque.
        if (type === "stream" && key.endsWith("}:log")) for (const entry of (await redis.xRange(key, "-", "+")) ?? []) expect(JSON.stringify(entry)).toMatch(/^\{"id":"[0-9-]+","message":\{"r":"[A-Za-z0-9+/]+=*"\}\}$/);
      }
    } finally {
      redis.destroy();
    }
  });

  it("refuse another key with PERMISSION_DENIED, on every replica, for resume and cancel", async () => {
    const first = await startAndDrop(a, "#sim tokens=2000 fail=stall fail_at=2 tag=replicas-other-key", 2);
    const id = responseIdOf(first);
    for (const g of [a, b]) {
      expect((await rpcFailure(collect(client(g).resumeStream({ responseId: id }, bearer(OTHER_KEY))))).code).toBe(Code.PermissionDenied);
      expect((await rpcFailure(client(g).cancelStream({ responseId: id }, bearer(OTHER_KEY)))).code).toBe(Code.PermissionDenied);
    }
    await client(b).cancelStream({ responseId: id }, bearer(OWNER_KEY));
    await sim.records.waitFor((r) => r.tag === "replicas-other-key" && r.endedAt !== undefined, 30_000);
  });

  it("stop the upstream on replica A when CancelStream reaches replica B; a reader then gets CANCELLED", async () => {
    const first = await startAndDrop(a, "#sim tokens=2000 fail=stall fail_at=3 tag=replicas-cancel", 3);
    const id = responseIdOf(first);
    await client(b).cancelStream({ responseId: id }, bearer(OWNER_KEY));
    const record = await sim.records.waitFor((r) => r.tag === "replicas-cancel" && r.endedAt !== undefined, 30_000);
    expect(record.outcome).toBe("client_closed");
    expect(record.tokensWritten).toBe(3);
    const error = await rpcFailure(collect(client(b).resumeStream({ responseId: id, afterSequence: 3n }, bearer(OWNER_KEY))));
    expect(error.code).toBe(Code.Canceled);
  });

  it("cancel the upstream when nobody resumes within the grace, then answer NOT_FOUND naming the id once the retention has passed", async () => {
    const first = await startAndDrop(c, "#sim tokens=2000 fail=stall fail_at=2 tag=replicas-expiry", 2);
    const id = responseIdOf(first);
    const record = await sim.records.waitFor((r) => r.tag === "replicas-expiry" && r.endedAt !== undefined, 30_000);
    expect(record.outcome).toBe("client_closed");
    // Retention is the subject: wait until Redis itself has dropped the stream (its PEXPIRE), whatever the machine's speed.
    const redis = await inspector();
    try {
      while ((await redis.exists(`${prefix}resume:{${streamSlot(id)}}:meta`)) === 1) await new Promise((resolve) => setTimeout(resolve, 100));
    } finally {
      redis.destroy();
    }
    const error = await rpcFailure(collect(client(a).resumeStream({ responseId: id }, bearer(OWNER_KEY))));
    expect(error.code).toBe(Code.NotFound);
    expect(error.rawMessage).toContain(id);
  });

  it("resume a facade stream on replica B from its Last-Event-ID", async () => {
    const headers = { "content-type": "application/json", authorization: `Bearer ${OWNER_KEY}` };
    const body = (prompt: string, resumable: boolean) => JSON.stringify({ model: "sim", stream: true, stream_options: { resumable }, messages: [{ role: "user", content: prompt }] });
    const direct = await readFacadeEvents(`${a.url}/v1/chat/completions`, { method: "POST", headers, body: body("#sim tokens=30", false) });
    expect(direct.events.every((e) => e.id === undefined)).toBe(true);
    const first = await readFacadeEvents(
      `${a.url}/v1/chat/completions`,
      { method: "POST", headers, body: body("#sim tokens=30 hold_at=12 tag=replicas-facade", true) },
      (events) => contentOfEvents(events).length > 0 && events.filter((e) => e.data.includes('"content":"') && !e.data.includes('"content":""')).length === 6,
    );
    const lastId = first.events.at(-1)!.id!;
    expect(lastId).toMatch(/^\d+$/);
    const completionId = (JSON.parse(first.events[0]!.data) as { id: string }).id;
    await sim.records.waitFor((r) => r.tag === "replicas-facade" && r.heldAt !== undefined, 30_000);
    const resumed = readFacadeEvents(`${b.url}/v1/chat/completions/${completionId}/stream`, { method: "GET", headers: { authorization: `Bearer ${OWNER_KEY}`, "last-event-id": lastId } });
    sim.records.release("replicas-facade");
    const rest = await resumed;
    expect(rest.status).toBe(200);
    expect(contentOfEvents(first.events) + contentOfEvents(rest.events)).toBe(contentOfEvents(direct.events));
    expect(rest.events.at(-1)!.data).toBe("[DONE]");
    const ids = [...first.events, ...rest.events].filter((e) => e.id !== undefined).map((e) => Number(e.id));
    expect(ids).toEqual([...ids].sort((x, y) => x - y));
    expect(new Set(ids).size).toBe(ids.length);
    // Every chunk keeps the original's completion id.
    expect(rest.events.filter((e) => e.data.startsWith("{")).every((e) => (JSON.parse(e.data) as { id: string }).id === completionId)).toBe(true);
  });
});
