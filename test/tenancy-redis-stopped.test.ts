import { Code, ConnectError } from "@connectrpc/connect";
import { afterAll, describe, expect, it, vi } from "vitest";
import { sha256Hex } from "../src/config/key-hash.js";
import { subjectOf } from "../src/store/tenant-store.js";
import { keyId } from "../src/tenancy/principal.js";
import { chatClient, collect, transports, userRequest } from "./helpers/clients.js";
import { type Harness, startHarness } from "./helpers/harness.js";
import { inspector, type OwnRedis, startOwnRedis, testPrefix, usageRecords } from "./helpers/redis.js";
import { type TenancyEvents, tenancyEvents } from "./helpers/tenancy-events.js";

/**
 * Redis really stopped (SIGSTOP): the connections stay open and every
 * command written is read by nobody until SIGCONT, when Redis runs all of
 * them, late. Two replicas fail open on their documented share (a limit
 * of 10 over `replicas: 2` is 5 each), and once Redis answers again the
 * books are exact: what Redis granted late is given back, every stream
 * admitted locally is in the request window once, every usage record is
 * stored once, and nothing is left in flight or reserved.
 */

/** Where the key's state is kept in Redis: its id, not its name "k". */
const K = (): string => subjectOf({ level: "key", id: keyId(sha256Hex(KEY)) });
const KEY = "sk-test-stopped-3e5a7c9b1d2f4068";
const PRICE = { inputPerMTok: 1_000, outputPerMTok: 2_000 };
const prefix = testPrefix("stopped");
const replicas: Array<{ h: Harness; events: TenancyEvents }> = [];
let redis: OwnRedis;

afterAll(async () => {
  redis?.thaw();
  for (const { h } of replicas) await h.close();
  await redis?.kill();
});

let ids = 0;
async function stream(h: Harness): Promise<{ id: string; code: Code | "ok" }> {
  const id = `stopped-${++ids}-${Date.now()}`;
  try {
    const request = userRequest("sim", "hi", { sampling: { maxTokens: 10 } });
    const messages = await collect(chatClient(transports(h.url)["grpc (connect-node, h2)"]!).streamChat(request, { headers: { authorization: `Bearer ${KEY}`, "x-request-id": id } }));
    return { id, code: messages.at(-1)?.delta.case === "finish" ? "ok" : Code.Unknown };
  } catch (e) {
    return { id, code: ConnectError.from(e).code };
  }
}

const ok = (results: ReadonlyArray<{ code: Code | "ok" }>) => results.filter((r) => r.code === "ok").length;

describe("Redis stopped with SIGSTOP under two replicas failing open", () => {
  it("admits each replica's share while it is stopped, and reconciles every count once it runs again", async () => {
    redis = await startOwnRedis();
    for (let i = 0; i < 2; i++) {
      const events = tenancyEvents();
      const h = await startHarness({
        routing: (sim) => ({
          providers: { simulator: { kind: "openai", baseUrl: sim.openAiBaseUrl } },
          models: { sim: { provider: "simulator", model: "sim-1?tokens=3", price: PRICE } },
        }),
        env: { STOPPED_KEY: KEY },
        auth: { keys: [{ name: "k", keyEnv: "STOPPED_KEY", limits: { requestsPerMinute: 10 }, budget: { usd: 100, period: "month" } }] },
        store: { redis: { url: redis.url, prefix, replicas: 2, timeoutMs: 200, failMode: "open", bufferMax: 100 } },
        observer: events.observer,
      });
      replicas.push({ h, events });
      await h.waitForLog((l) => l.event === "store.connected");
    }
    const [a, b] = replicas as [(typeof replicas)[0], (typeof replicas)[0]];

    const before = [await stream(a.h), await stream(b.h)];
    expect(before.map((r) => r.code)).toEqual(["ok", "ok"]);
    for (const [r, { events }] of [
      [before[0]!, a],
      [before[1]!, b],
    ] as const)
      await events.recorded(r.id);

    redis.freeze();
    // Six at once on each replica: all six admissions are written to the frozen Redis and wait;
    // after 3 × 200 ms of silence Redis is down and each replica admits its share, 5.
    const during = await Promise.all([...Array.from({ length: 6 }, () => stream(a.h)), ...Array.from({ length: 6 }, () => stream(b.h))]);
    expect(ok(during.slice(0, 6))).toBe(5);
    expect(ok(during.slice(6))).toBe(5);
    expect(new Set(during.map((r) => r.code))).toEqual(new Set(["ok", Code.ResourceExhausted]));
    for (const { h, events } of [a, b]) {
      await h.waitForLog((l) => l.event === "store.down");
      expect(events.fallbacks.admit).toBe(6);
    }
    const served = during.filter((r) => r.code === "ok");
    const owner = (i: number) => (i < 6 ? a : b);
    for (const [i, r] of during.entries()) if (r.code === "ok") await owner(i).events.recorded(r.id, (result) => result === "buffered");

    redis.thaw();
    // Redis runs the twelve admissions it was sent, late: 8 fit next to the 2 it knew of, and are given back.
    for (const { h } of [a, b]) await h.waitForLog((l) => l.event === "store.up", 30_000);
    for (const [i, r] of during.entries()) if (r.code === "ok") await owner(i).events.recorded(r.id, (result) => result === "flushed");
    const late = () => [a, b].flatMap(({ h }) => h.logs().filter((l) => l.event === "store.late_answer"));
    await vi.waitFor(() => expect(late()).toHaveLength(12), { timeout: 30_000, interval: 20 });
    expect(late().filter((l) => l.outcome === "released")).toHaveLength(8);

    const client = await inspector(redis.url);
    try {
      await vi.waitFor(
        async () => {
          // Everything granted late is released: no slot in flight, no budget reserved.
          expect(await client.zCard(`${prefix}fly:{${K()}}`)).toBe(0);
          for (const rollup of await client.keys(`${prefix}use:{${K()}}:*`)) expect(Number((await client.hGet(rollup, "reserved")) ?? 0)).toBe(0);
        },
        { timeout: 30_000, interval: 50 },
      );
      // Every admitted request counted once in the window: 2 through Redis, 10 on the replicas' shares.
      const window = await client.zRange(`${prefix}req:{${K()}}`, 0, -1);
      expect(window).toHaveLength(12);
      expect(window.filter((m) => m.endsWith(":local"))).toHaveLength(10);
      const records = await usageRecords(prefix, redis.url);
      expect(records.map((r) => r.requestId).sort()).toEqual([...before, ...served].map((r) => r.id).sort());
      // Each period's rollup (day, week, month) counts each request once.
      const rollups = await client.keys(`${prefix}use:{${K()}}:*`);
      expect(rollups.length).toBeGreaterThan(0);
      for (const rollup of rollups) expect(Number(await client.hGet(rollup, "requests"))).toBe(12);
    } finally {
      client.destroy();
    }
    // And Redis is the one limit again: 12 of 10 used, so the next request is refused by Redis.
    const after = await stream(a.h);
    expect(after.code).toBe(Code.ResourceExhausted);
    expect(a.events.fallbacks.admit).toBe(6);
  });
});
