import { randomUUID } from "node:crypto";
import { Code, ConnectError } from "@connectrpc/connect";
import { createGrpcTransport } from "@connectrpc/connect-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { ConfigInput } from "../src/config/schema.js";
import { type Simulator, startSimulator } from "../src/simulator/server.js";
import { adminClient } from "./helpers/admin.js";
import { type ChatClient, chatClient, userRequest } from "./helpers/clients.js";
import { type CpuLoad, startCpuLoad } from "./helpers/cpu-load.js";
import { type GatewayProcess, startGatewayProcess } from "./helpers/gateway-process.js";
import { dropPrefix, inspector, SHARED_REDIS_URL, testPrefix, usageRecords } from "./helpers/redis.js";

/**
 * Limits across replicas must hold when the replicas are busy, not only
 * when Redis is. Three gateway processes share one Redis on the default
 * store settings (fail open, 250 ms timeout), while busy-loop processes
 * keep both cores saturated and each wave sends 300 gRPC streams at once
 * (100 per replica, on one HTTP/2 connection each): a replica's batch of
 * admissions is then answered hundreds of milliseconds after it was
 * written. Every admitted stream holds after its first token until the
 * test releases its wave, so nothing settles (and no reservation is
 * refunded) before every admission is decided: exactly the limit may pass,
 * for requests, tokens, concurrent streams and budgets.
 */

const ADMIN_KEY = "sk-test-admin-0b2d4f6a8c1e3957";
const PRICE = { inputPerMTok: 1_000, outputPerMTok: 2_000 };
const MAX_TOKENS = 100;
const prefix = testPrefix("busy");

let sim: Simulator;
let gateways: GatewayProcess[] = [];
let load: CpuLoad | undefined;

beforeAll(async () => {
  sim = await startSimulator();
  const config: ConfigInput = {
    log: { level: "debug" },
    providers: { simulator: { kind: "openai", baseUrl: sim.openAiBaseUrl } },
    models: { sim: { provider: "simulator", model: "sim-1?tokens=2", price: PRICE } },
    auth: { adminKeyEnv: "SLUICE_ADMIN_KEY", keys: [] },
    // The defaults a deployment would have: failing open, the 250 ms command timeout.
    store: { redis: { url: SHARED_REDIS_URL, prefix, replicas: 3 } },
  };
  gateways = await Promise.all([0, 1, 2].map(() => startGatewayProcess(config, { env: { ...process.env, SLUICE_ADMIN_KEY: ADMIN_KEY } })));
  await Promise.all(gateways.map((g) => g.waitForLine((l) => l.event === "store.connected")));
  load = await startCpuLoad();
});

afterAll(async () => {
  await load?.stop();
  await Promise.all(gateways.map((g) => g.stop()));
  await sim?.close();
  await dropPrefix(prefix);
});

/** A tag of fixed length, so every request's prompt (and so its token and cost reservation) is the same size. */
const newTag = () => `w${randomUUID().replaceAll("-", "").slice(0, 12)}`;

const WAVE = 300;

interface Sent {
  /** "ok" once the first message came (admitted, now held), or the refusal's code. */
  readonly outcome: "ok" | Code;
  readonly id: string;
  /** Resolves when the stream has ended (after its release), with its error if it failed. */
  readonly ended: Promise<Code | "ok">;
}

const clients: ChatClient[] = [];
const clientOf = (i: number) => (clients[i] ??= chatClient(createGrpcTransport({ baseUrl: gateways[i]!.url })));

/** One gRPC stream that holds after its first token until `tag` is released; resolves once it is admitted or refused. */
function send(gateway: number, key: string, tag: string): Promise<Sent> {
  const id = `busy-${randomUUID()}`;
  const request = userRequest("sim", `#sim hold_at=1 tag=${tag}`, { sampling: { maxTokens: MAX_TOKENS } });
  const stream = clientOf(gateway)
    .streamChat(request, { headers: { authorization: `Bearer ${key}`, "x-request-id": id } })
    [Symbol.asyncIterator]();
  let decided: (outcome: Sent["outcome"]) => void = () => undefined;
  const decision = new Promise<Sent["outcome"]>((resolve) => (decided = resolve));
  const ended = (async (): Promise<Code | "ok"> => {
    try {
      const first = await stream.next();
      decided(first.done ? Code.Unknown : "ok");
      while (!(await stream.next()).done) {
        // the rest of the answer, after the release
      }
      return "ok";
    } catch (error) {
      const code = ConnectError.from(error).code;
      decided(code);
      return code;
    }
  })();
  return decision.then((outcome) => ({ outcome, id, ended }));
}

/** `count` requests at once, spread over the replicas (and over `keys`, when several); resolves when every one is admitted (streaming, held) or refused. */
async function wave(keys: string | readonly string[], tag: string, count = WAVE): Promise<Sent[]> {
  const list = typeof keys === "string" ? [keys] : keys;
  return Promise.all(Array.from({ length: count }, (_, i) => send(i % 3, list[i % list.length]!, tag)));
}

/** Releases the holds, waits for every stream's end, and for each admitted stream's usage to be recorded. */
async function finish(tag: string, sent: readonly Sent[]): Promise<void> {
  sim.records.release(tag);
  const ends = await Promise.all(sent.map((s) => s.ended));
  sent.forEach((s, i) => expect(ends[i]).toBe(s.outcome));
  await Promise.all(sent.filter((s) => s.outcome === "ok").map((s) => Promise.any(gateways.map((g) => g.waitForLine((l) => l.event === "usage.recorded" && l.requestId === s.id, 60_000)))));
}

const admin = () => adminClient(gateways[0]!.url, ADMIN_KEY);

/** What one request reserves (tokens, micro-dollars), read from a fresh key's quota headers after one admission. */
async function reservation(): Promise<{ tokens: number; micros: number }> {
  const budget = 1_000_000_000;
  const probe = await admin().createKey({ name: `probe-${randomUUID().slice(0, 8)}`, limits: { tokensPerMinute: 1_000_000n }, budget: { usdMicros: BigInt(budget) } });
  const tag = newTag();
  sim.records.release(tag);
  const headers: Headers[] = [];
  const request = userRequest("sim", `#sim hold_at=1 tag=${tag}`, { sampling: { maxTokens: MAX_TOKENS } });
  for await (const _ of clientOf(0).streamChat(request, { headers: { authorization: `Bearer ${probe.key}` }, onHeader: (h) => headers.push(h) })) {
    // read to the end
  }
  const tokens = 1_000_000 - Number(headers[0]!.get("x-ratelimit-remaining-tokens"));
  const micros = budget - Math.round(Number(headers[0]!.get("sluice-budget-remaining-usd")) * 1e6);
  expect(tokens).toBeGreaterThan(MAX_TOKENS);
  expect(micros).toBeGreaterThan(MAX_TOKENS * 2_000);
  return { tokens, micros };
}

const admittedOf = (sent: readonly Sent[]) => sent.filter((s) => s.outcome === "ok").length;

/** Every refusal is a rate-limit or budget refusal, never a store outage or an error. */
function expectRefusedByLimits(sent: readonly Sent[]) {
  expect(new Set(sent.map((s) => s.outcome))).toEqual(new Set(["ok", Code.ResourceExhausted]));
}

/** No replica declared Redis down or fell back to its local share: nothing happened to Redis. */
function expectNoFallback() {
  for (const g of gateways) expect(g.lines().filter((l) => l.event === "store.down")).toEqual([]);
}

describe("three busy replicas sharing one Redis, on default store settings", () => {
  it("admit exactly 30 requests, over two waves, for a key of 30 requests per minute", async () => {
    const key = await admin().createKey({ name: `rpm-${randomUUID().slice(0, 8)}`, limits: { requestsPerMinute: 30 } });
    const tag = newTag();
    const sent = [...(await wave(key.key, tag)), ...(await wave(key.key, tag))];
    expectRefusedByLimits(sent);
    expect(admittedOf(sent)).toBe(30);
    await finish(tag, sent);
    const records = (await usageRecords(prefix)).filter((r) => r.key === key.info!.name);
    expect(records).toHaveLength(30);
    const redis = await inspector();
    try {
      // Exactly the admitted requests in the window: none counted twice, none orphaned.
      expect(await redis.zCard(`${prefix}req:{~k:${key.info!.id}}`)).toBe(30);
      expect(await redis.zCard(`${prefix}fly:{~k:${key.info!.id}}`)).toBe(0);
    } finally {
      redis.destroy();
    }
    expectNoFallback();
  }, 120_000);

  it("admit exactly what fits a tokens-per-minute limit", async () => {
    const { tokens } = await reservation();
    const fits = 20;
    const key = await admin().createKey({ name: `tpm-${randomUUID().slice(0, 8)}`, limits: { tokensPerMinute: BigInt(fits * tokens + Math.floor(tokens / 2)) } });
    const tag = newTag();
    const sent = await wave(key.key, tag);
    expectRefusedByLimits(sent);
    expect(admittedOf(sent)).toBe(fits);
    await finish(tag, sent);
    expectNoFallback();
  }, 120_000);

  it("admit exactly the concurrent streams a key may hold", async () => {
    const key = await admin().createKey({ name: `streams-${randomUUID().slice(0, 8)}`, limits: { concurrentStreams: 7 } });
    const tag = newTag();
    const sent = await wave(key.key, tag);
    expectRefusedByLimits(sent);
    expect(admittedOf(sent)).toBe(7);
    await finish(tag, sent);
    const redis = await inspector();
    try {
      expect(await redis.zCard(`${prefix}fly:{~k:${key.info!.id}}`)).toBe(0);
    } finally {
      redis.destroy();
    }
    expectNoFallback();
  }, 120_000);

  it("admit exactly what a budget can reserve, and leave nothing reserved once they end", async () => {
    const { micros } = await reservation();
    const fits = 12;
    const key = await admin().createKey({ name: `budget-${randomUUID().slice(0, 8)}`, budget: { usdMicros: BigInt(fits * micros + Math.floor(micros / 2)) } });
    const tag = newTag();
    const sent = await wave(key.key, tag);
    expectRefusedByLimits(sent);
    expect(admittedOf(sent)).toBe(fits);
    await finish(tag, sent);
    const redis = await inspector();
    try {
      const [rollup] = await redis.keys(`${prefix}use:{~k:${key.info!.id}}:m*`);
      expect(await redis.hGet(rollup!, "reserved")).toBe("0");
      expect(await redis.hGet(rollup!, "requests")).toBe(String(fits));
    } finally {
      redis.destroy();
    }
    expectNoFallback();
  }, 120_000);

  it("admit exactly what a team's budget can reserve across its keys: 200 streams at once, the rest refused naming the team", async () => {
    const { micros } = await reservation();
    const fits = 10;
    const team = `team-${randomUUID().slice(0, 8)}`;
    const { team: created } = await admin().createTeam({ name: team, budget: { usdMicros: BigInt(fits * micros + Math.floor(micros / 2)) } });
    // Four keys over three replicas: every key is admitted on every replica. No key has a limit of its own.
    const keys = await Promise.all([0, 1, 2, 3].map((i) => admin().createKey({ name: `member-${i}-${randomUUID().slice(0, 8)}`, team })));
    const tag = newTag();
    const sent = await wave(
      keys.map((k) => k.key),
      tag,
      200,
    );
    expectRefusedByLimits(sent);
    expect(admittedOf(sent)).toBe(fits);

    // While they hold the budget, the facade refuses with 402 naming the team.
    const res = await fetch(`${gateways[1]!.url}/v1/chat/completions`, {
      method: "POST",
      headers: { "content-type": "application/json", authorization: `Bearer ${keys[0]!.key}` },
      body: JSON.stringify({ model: "sim", max_tokens: MAX_TOKENS, messages: [{ role: "user", content: "hi" }] }),
    });
    expect(res.status).toBe(402);
    expect(res.headers.get("sluice-budget-level")).toBe("team");

    await finish(tag, sent);
    const redis = await inspector();
    try {
      const [rollup] = await redis.keys(`${prefix}use:{~t:${created!.id}}:m*`);
      expect(await redis.hGet(rollup!, "reserved")).toBe("0");
      expect(await redis.hGet(rollup!, "requests")).toBe(String(fits));
    } finally {
      redis.destroy();
    }
    const records = (await usageRecords(prefix)).filter((r) => r.team === team);
    expect(records).toHaveLength(fits);
    expectNoFallback();
  }, 120_000);
});
