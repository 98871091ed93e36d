import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { sha256Hex } from "../src/config/key-hash.js";
import type { ConfigInput } from "../src/config/schema.js";
import { type Simulator, startSimulator } from "../src/simulator/server.js";
import { subjectOf } from "../src/store/tenant-store.js";
import { keyId } from "../src/tenancy/principal.js";
import { adminClient } from "./helpers/admin.js";
import { type GatewayProcess, startGatewayProcess } from "./helpers/gateway-process.js";
import { baseUrlFor, type Harness, startHarness } from "./helpers/harness.js";
import { createManualTimers, type ManualTimers } from "./helpers/manual-timers.js";
import { dropPrefix, inspector, SHARED_REDIS_URL, testPrefix } from "./helpers/redis.js";
import { type TenancyEvents, tenancyEvents } from "./helpers/tenancy-events.js";

/**
 * Stream leases (docs/tenancy.md, "Rate limits"): a stream holds its
 * concurrency slot and budget reservation through a lease its replica
 * renews every third of `streamLeaseMs` while it runs, so a stream longer
 * than one lease keeps them, and one whose replica died frees them a lease
 * later, found by whichever replica looks next.
 */

const PRICE = { inputPerMTok: 1_000, outputPerMTok: 2_000 };
const LEASE_MS = 60_000;

describe("a stream longer than its lease", () => {
  const KEY = "sk-test-long-lease-4b6d8f0a2c1e3957";
  const prefix = testPrefix("long-lease");
  const events: TenancyEvents = tenancyEvents();
  let timers: ManualTimers;
  let h: Harness;
  /** A second replica on the same Redis, clock and heartbeat timer. */
  let other: Harness;
  let redis: Awaited<ReturnType<typeof inspector>>;

  beforeAll(async () => {
    // The heartbeat's timer and the store's clock are the test's: leases pass without anyone waiting for them.
    timers = createManualTimers(Date.UTC(2026, 4, 20, 12));
    const replica = () =>
      startHarness({
        routing: (sim) => ({
          providers: { simulator: { kind: "openai", baseUrl: baseUrlFor(sim, "openai"), breaker: { failures: 10_000 } } },
          models: { sim: { provider: "simulator", model: "sim-1?tokens=3", price: PRICE } },
        }),
        env: { LONG: KEY },
        auth: { keys: [{ name: "long", keyEnv: "LONG", limits: { concurrentStreams: 1 }, budget: { usd: 1, period: "month" } }] },
        store: { redis: { url: SHARED_REDIS_URL, prefix, failMode: "closed", timeoutMs: 5_000, streamLeaseMs: LEASE_MS } },
        storeClock: timers.now,
        leaseTimers: timers,
        observer: events.observer,
      });
    h = await replica();
    other = await replica();
    redis = await inspector();
  });
  afterAll(async () => {
    redis?.destroy();
    await h?.close();
    await other?.close();
    await dropPrefix(prefix);
  });

  let ids = 0;
  const open = (content: string, signal?: AbortSignal) => {
    const id = `long-lease-${++ids}-${Date.now()}`;
    const response = fetch(`${h.url}/v1/chat/completions`, {
      method: "POST",
      headers: { "content-type": "application/json", authorization: `Bearer ${KEY}`, "x-request-id": id },
      body: JSON.stringify({ model: "sim", max_tokens: 10, stream: true, messages: [{ role: "user", content }] }),
      ...(signal ? { signal } : {}),
    });
    return { id, response };
  };

  /** The key's one lease in Redis, as its expiry (store clock), or undefined when none is held. */
  const leaseExpiry = async () => (await redis.zRangeWithScores(`${prefix}fly:{~k:${keyId(sha256Hex(KEY))}}`, 0, -1))[0]?.score;

  /** Moves the clock two whole leases on, a heartbeat period at a time, waiting for each renewal to land in Redis. */
  const outliveTwoLeases = async () => {
    for (let beat = 0; beat < 6; beat++) {
      timers.advance(LEASE_MS / 3);
      await vi.waitFor(async () => expect(await leaseExpiry()).toBe(timers.now() + LEASE_MS), { timeout: 10_000, interval: 20 });
    }
  };

  const reserved = async () => (await h.sluice.tenancy.store.usage(subjectOf({ level: "key", id: keyId(sha256Hex(KEY)) }), "month")).reservedMicros;

  it("keeps its slot and reservation while it runs, and frees both once when it completes", async () => {
    const tag = `long-done-${Date.now()}`;
    const first = open(`#sim tokens=3 hold_at=1 tag=${tag}`);
    await h.sim.records.waitFor((r) => r.tag === tag && r.heldAt !== undefined, 30_000);
    const held = await reserved();
    expect(held).toBeGreaterThan(0);
    await outliveTwoLeases();

    // Two leases after its admission it still holds the key's only slot, and its reservation, on every replica.
    for (const replica of [h, other]) {
      const second = await fetch(`${replica.url}/v1/chat/completions`, {
        method: "POST",
        headers: { "content-type": "application/json", authorization: `Bearer ${KEY}` },
        body: JSON.stringify({ model: "sim", max_tokens: 10, messages: [{ role: "user", content: "hi" }] }),
      });
      expect(second.status).toBe(429);
      expect(((await second.json()) as { error: { message: string } }).error.message).toMatch(/concurrent streams in use/);
    }
    expect(await reserved()).toBe(held);

    h.sim.records.release(tag);
    const done = await first.response;
    expect(done.status).toBe(200);
    expect(await done.text()).toContain("data: [DONE]");
    const record = await events.recorded(first.id);
    expect(record.outcome).toBe("completed");
    const usage = await h.sluice.tenancy.store.usage(subjectOf({ level: "key", id: keyId(sha256Hex(KEY)) }), "month");
    expect(usage).toMatchObject({ reservedMicros: 0, spendMicros: record.costMicros, requests: 1 });
    expect(await leaseExpiry()).toBeUndefined();
    expect(await redis.zCard(`${prefix}leases`)).toBe(0);
  });

  it("frees them once when its client cancels it after several renewals, and the heartbeat renews it no more", async () => {
    const tag = `long-cancel-${Date.now()}`;
    const abort = new AbortController();
    const stream = open(`#sim tokens=3 hold_at=1 tag=${tag}`, abort.signal);
    const response = await stream.response;
    expect(response.status).toBe(200);
    await h.sim.records.waitFor((r) => r.tag === tag && r.heldAt !== undefined, 30_000);
    await outliveTwoLeases();
    abort.abort();
    const record = await events.recorded(stream.id);
    expect(record.outcome).toBe("canceled");
    h.sim.records.release(tag);
    expect(await reserved()).toBe(0);
    expect(await leaseExpiry()).toBeUndefined();
    // Later heartbeats find nothing to renew, and a new stream takes the slot.
    timers.advance(LEASE_MS);
    expect(await redis.zCard(`${prefix}leases`)).toBe(0);
    const next = open("#sim tokens=2");
    expect((await next.response).status).toBe(200);
    await events.recorded(next.id);
    expect(await reserved()).toBe(0);
  });
});

describe("a replica killed mid-stream", () => {
  const KEY = "sk-test-killed-8d0f2b4a6c1e3957";
  const ADMIN_KEY = "sk-test-admin-killed-5a7c9e1b3d2f4068";
  const prefix = testPrefix("killed");
  let sim: Simulator;
  let gateways: GatewayProcess[] = [];

  beforeAll(async () => {
    sim = await startSimulator();
    const config: ConfigInput = {
      log: { level: "info" },
      providers: { simulator: { kind: "openai", baseUrl: sim.openAiBaseUrl } },
      models: { sim: { provider: "simulator", model: "sim-1?tokens=3", price: PRICE } },
      auth: { adminKeyEnv: "SLUICE_ADMIN_KEY", keys: [{ name: "doomed", sha256: sha256Hex(KEY), budget: { usd: 1, period: "month" } }] },
      // A short lease (renewed every second): a dead replica's streams are released within a few seconds.
      store: { redis: { url: SHARED_REDIS_URL, prefix, failMode: "closed", timeoutMs: 5_000, streamLeaseMs: 3_000 } },
    };
    // Every process that started is stopped after the suite, even when the other did not start.
    const started = await Promise.allSettled([0, 1].map(() => startGatewayProcess(config, { env: { ...process.env, SLUICE_ADMIN_KEY: ADMIN_KEY } })));
    gateways = started.flatMap((s) => (s.status === "fulfilled" ? [s.value] : []));
    const failed = started.find((s): s is PromiseRejectedResult => s.status === "rejected");
    if (failed) throw failed.reason;
    await Promise.all(gateways.map((g) => g.waitForLine((l) => l.event === "server.readiness" && l.ready === true)));
  });
  afterAll(async () => {
    await Promise.all(gateways.map((g) => g.stop()));
    await sim?.close();
    await dropPrefix(prefix);
  });

  it("leaves no reservation behind though no request of that key follows, and GetUsage never shows it", async () => {
    const [doomed, survivor] = gateways as [GatewayProcess, GatewayProcess];
    const tag = `killed-${Date.now()}`;
    const stream = fetch(`${doomed.url}/v1/chat/completions`, {
      method: "POST",
      headers: { "content-type": "application/json", authorization: `Bearer ${KEY}` },
      body: JSON.stringify({ model: "sim", max_tokens: 100, stream: true, messages: [{ role: "user", content: `#sim tokens=3 hold_at=1 tag=${tag}` }] }),
    }).catch(() => undefined);
    await sim.records.waitFor((r) => r.tag === tag && r.heldAt !== undefined, 30_000);
    const redis = await inspector();
    try {
      const rollup = (await redis.keys(`${prefix}use:{~k:${keyId(sha256Hex(KEY))}}:m*`))[0]!;
      expect(Number(await redis.hGet(rollup, "reserved"))).toBeGreaterThan(0);
      const admin = adminClient(survivor.url, ADMIN_KEY);
      expect((await admin.getUsage({ name: "doomed" })).reservedUsdMicros).toBeGreaterThan(0n);

      doomed.child.kill("SIGKILL");
      await stream;
      // The survivor's heartbeat finds the lease that ran out and releases it: nobody asks for the key again.
      await vi.waitFor(async () => expect(Number(await redis.hGet(rollup, "reserved"))).toBe(0), { timeout: 20_000, interval: 50 });
      expect(await redis.zCard(`${prefix}fly:{~k:${keyId(sha256Hex(KEY))}}`)).toBe(0);
      expect((await admin.getUsage({ name: "doomed" })).reservedUsdMicros).toBe(0n);
    } finally {
      sim.records.release(tag);
      redis.destroy();
    }
  });
});
