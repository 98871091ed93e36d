import { Code, ConnectError, createClient } from "@connectrpc/connect";
import { createConnectTransport, createGrpcTransport } from "@connectrpc/connect-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { AdminService } from "../gen/sluice/admin/v1/admin_service_pb.js";
import type { WatchStatsResponse } from "../gen/sluice/admin/v1/stats_pb.js";
import { chatClient, collect, transports, userRequest } from "./helpers/clients.js";
import { FAR_TIMEOUTS, type Harness, startHarness } from "./helpers/harness.js";
import { createManualTimers, type ManualTimers } from "./helpers/manual-timers.js";
import { type TenancyEvents, tenancyEvents } from "./helpers/tenancy-events.js";

const T0 = Date.UTC(2026, 0, 1, 12, 0, 0);

/** Reads a stream one message at a time, so a test can step the clock between messages. */
function reader(stream: AsyncIterable<WatchStatsResponse>) {
  const iterator = stream[Symbol.asyncIterator]();
  return {
    async next(): Promise<WatchStatsResponse> {
      const result = await iterator.next();
      if (result.done) throw new Error("the stream ended");
      return result.value;
    },
    close: () => iterator.return?.(),
  };
}

const msOf = (m: WatchStatsResponse) => Number(m.time!.seconds) * 1000 + m.time!.nanos / 1e6;

describe("WatchStats with the console open", () => {
  let h: Harness;
  let timers: ManualTimers;
  let admin: ReturnType<typeof createClient<typeof AdminService>>;
  beforeAll(async () => {
    timers = createManualTimers(T0);
    h = await startHarness({ models: { sim: "sim-1?tokens=5" }, provider: { timeouts: FAR_TIMEOUTS }, console: { access: "open", maxWatchers: 2 }, timers });
    admin = createClient(AdminService, createGrpcTransport({ baseUrl: h.url }));
  });
  afterAll(() => h.close());

  it("sends a snapshot at once, then one per second of the injected clock", async () => {
    const abort = new AbortController();
    const watch = reader(admin.watchStats({}, { signal: abort.signal }));
    try {
      expect(msOf(await watch.next())).toBe(T0);
      for (let step = 1; step <= 3; step++) {
        await timers.whenPending(1);
        timers.advance(1_000);
        expect(msOf(await watch.next())).toBe(T0 + step * 1_000);
      }
    } finally {
      abort.abort();
      await timers.whenIdle();
    }
  });

  it("shows a stream from another client in the active count while it runs, then in the outcomes", async () => {
    const abort = new AbortController();
    const watch = reader(admin.watchStats({}, { signal: abort.signal }));
    const step = async () => {
      await timers.whenPending(1);
      timers.advance(1_000);
      return watch.next();
    };
    try {
      const before = await watch.next();
      expect(before.activeStreams).toBe(0);
      const okBefore = before.outcomes.find((o) => o.outcome === "ok")?.total ?? 0n;
      const chat = chatClient(transports(h.url)["connect (connect-node, HTTP/1.1)"]!);
      const done = collect(chat.streamChat(userRequest("sim", "#sim hold_at=2 tag=watch-active")));
      await h.sim.records.waitFor((r) => r.tag === "watch-active" && r.heldAt !== undefined, 30_000);
      const during = await step();
      expect(during.activeStreams).toBe(1);
      expect(during.queues).toEqual([expect.objectContaining({ provider: "simulator", inFlight: 1 })]);
      // Named by the alias callers use, the upstream model string beside it.
      expect(during.breakers).toEqual([expect.objectContaining({ target: "simulator/sim-1?tokens=5", aliases: ["sim"] })]);
      h.sim.records.release("watch-active");
      await done;
      const after = await step();
      expect(after.activeStreams).toBe(0);
      expect(after.outcomes.find((o) => o.outcome === "ok")?.total).toBe(okBefore + 1n);
      // The stream's deltas and its TTFT landed in the seconds the injected clock says.
      expect(after.series.reduce((sum, p) => sum + p.deltas, 0)).toBeGreaterThan(0);
      expect(after.ttft?.samples).toBeGreaterThan(0n);
    } finally {
      abort.abort();
      await timers.whenIdle();
    }
  });

  it("releases a watcher whose client leaves: its timer is cleared and its slot is free", async () => {
    const abort = new AbortController();
    const watch = reader(admin.watchStats({}, { signal: abort.signal }));
    await watch.next();
    await timers.whenPending(1);
    expect(h.sluice.statsWatch?.watchers).toBe(1);
    abort.abort();
    await timers.whenIdle();
    expect(h.sluice.statsWatch?.watchers).toBe(0);
  });

  it("refuses watchers past console.maxWatchers with RESOURCE_EXHAUSTED, and takes one again when a slot frees", async () => {
    const aborts = [new AbortController(), new AbortController()];
    const watches = aborts.map((a) => reader(admin.watchStats({}, { signal: a.signal })));
    for (const w of watches) await w.next();
    await expect(reader(admin.watchStats({})).next()).rejects.toMatchObject({ code: Code.ResourceExhausted });
    await timers.whenPending(2);
    aborts[0]!.abort();
    // Its timer is cleared after its slot is released (both on its departure signal, in that order).
    await timers.whenAtMost(1);
    expect(h.sluice.statsWatch?.watchers).toBe(1);
    // A new watcher, over HTTP/1.1 this time, takes the freed slot.
    const h1 = createClient(AdminService, createConnectTransport({ baseUrl: h.url, httpVersion: "1.1" }));
    const again = new AbortController();
    await reader(h1.watchStats({}, { signal: again.signal })).next();
    again.abort();
    aborts[1]!.abort();
    await timers.whenIdle();
    expect(h.sluice.statsWatch?.watchers).toBe(0);
  });
});

describe("WatchStats per-key headroom", () => {
  const TENANT_KEY = "tenant-key-for-headroom-watch-tests";
  const limits = { requestsPerMinute: 10, tokensPerMinute: 10_000, concurrentStreams: 3 };
  let h: Harness;
  let timers: ManualTimers;
  let events: TenancyEvents;
  let admin: ReturnType<typeof createClient<typeof AdminService>>;
  beforeAll(async () => {
    timers = createManualTimers(T0);
    events = tenancyEvents();
    h = await startHarness({
      models: { sim: "sim-1?tokens=5" },
      provider: { timeouts: FAR_TIMEOUTS },
      env: { HEADROOM_KEY: TENANT_KEY },
      auth: { keys: [{ name: "team", keyEnv: "HEADROOM_KEY", limits }] },
      console: { access: "open" },
      timers,
      storeClock: timers.now,
      observer: events.observer,
    });
    admin = createClient(AdminService, createGrpcTransport({ baseUrl: h.url }));
  });
  afterAll(() => h.close());

  it("carries requests and tokens left this minute and the streams in use: up while a stream is held, down once it settles", async () => {
    const abort = new AbortController();
    const watch = reader(admin.watchStats({}, { signal: abort.signal }));
    const team = async () => {
      await timers.whenPending(1);
      timers.advance(1_000);
      return (await watch.next()).keys.find((k) => k.name === "team");
    };
    try {
      const before = (await watch.next()).keys.find((k) => k.name === "team");
      expect(before).toMatchObject({ requestsPerMinute: 10, requestsRemaining: 10, tokensPerMinute: 10_000n, tokensRemaining: 10_000n, concurrentStreams: 3, streamsActive: 0 });

      const chat = chatClient(transports(h.url)["grpc (connect-node, h2)"]!);
      const request = userRequest("sim", "#sim hold_at=2 tag=watch-headroom", { sampling: { maxTokens: 50 } });
      const done = collect(chat.streamChat(request, { headers: { authorization: `Bearer ${TENANT_KEY}`, "x-request-id": "watch-headroom" } }));
      await h.sim.records.waitFor((r) => r.tag === "watch-headroom" && r.heldAt !== undefined, 30_000);
      const during = await team();
      // Admitted: one request of the minute used, the prompt's estimate plus max_tokens reserved, one slot held.
      expect(during).toMatchObject({ requestsRemaining: 9, streamsActive: 1 });
      expect(during!.tokensRemaining).toBeLessThanOrEqual(10_000n - 50n);

      h.sim.records.release("watch-headroom");
      const usage = (await done).find((m) => m.delta.case === "usage")?.delta.value;
      if (!usage || !("inputTokens" in usage)) throw new Error("the stream sent no usage");
      await events.recorded("watch-headroom");
      const after = await team();
      // Settled: the slot is free and the reservation became what the stream used.
      expect(after).toMatchObject({ requestsRemaining: 9, streamsActive: 0, tokensRemaining: 10_000n - usage.inputTokens - usage.outputTokens });
    } finally {
      abort.abort();
      await timers.whenIdle();
    }
  });
});

describe("WatchStats behind the admin key", () => {
  const ADMIN_KEY = "admin-key-for-watch-stats-tests";
  const TENANT_KEY = "tenant-key-for-watch-stats-tests";
  let h: Harness;
  let admin: ReturnType<typeof createClient<typeof AdminService>>;
  beforeAll(async () => {
    h = await startHarness({
      models: { sim: "sim-1?tokens=5" },
      env: { SLUICE_ADMIN_KEY: ADMIN_KEY, TEAM_KEY: TENANT_KEY },
      auth: { adminKeyEnv: "SLUICE_ADMIN_KEY", keys: [{ name: "team", keyEnv: "TEAM_KEY" }] },
      timers: createManualTimers(T0),
    });
    admin = createClient(AdminService, createGrpcTransport({ baseUrl: h.url }));
  });
  afterAll(() => h.close());

  const refusal = async (headers: Record<string, string>) => {
    try {
      await reader(admin.watchStats({}, { headers })).next();
    } catch (error) {
      return ConnectError.from(error);
    }
    throw new Error("the watch was not refused");
  };

  it("refuses a caller without a key, with a wrong key, or with a tenant's key: UNAUTHENTICATED, the key never echoed", async () => {
    const attempts: Array<Record<string, string>> = [{}, { authorization: "Bearer not-the-admin-key" }, { authorization: `Bearer ${TENANT_KEY}` }, { authorization: "Basic abc" }];
    for (const headers of attempts) {
      const error = await refusal(headers);
      expect(error.code).toBe(Code.Unauthenticated);
      expect(error.message).not.toContain("not-the-admin-key");
      expect(error.message).not.toContain(TENANT_KEY);
    }
    expect(h.logText()).not.toContain(TENANT_KEY);
    expect(h.logText()).not.toContain(ADMIN_KEY);
  });

  it("serves the admin key, and the console defaults to admin access", async () => {
    const abort = new AbortController();
    const first = await reader(admin.watchStats({}, { headers: { authorization: `Bearer ${ADMIN_KEY}` }, signal: abort.signal })).next();
    abort.abort();
    expect(msOf(first)).toBe(T0);
    // The configured key appears by name, with its period's figures.
    expect(first.keys.map((k) => k.name)).toEqual(["team"]);
    expect(h.logText()).not.toContain(ADMIN_KEY);
    const page = await fetch(`${h.url}/console/`);
    await page.arrayBuffer();
    expect(page.status).not.toBe(404);
  });
});

describe("WatchStats with the console off and no admin key", () => {
  let h: Harness;
  beforeAll(async () => {
    h = await startHarness({ models: { sim: "sim-1?tokens=5" } });
  });
  afterAll(() => h.close());

  it("is not served at all, and neither is /console", async () => {
    const admin = createClient(AdminService, createGrpcTransport({ baseUrl: h.url }));
    await expect(reader(admin.watchStats({})).next()).rejects.toMatchObject({ code: Code.Unimplemented });
    const page = await fetch(`${h.url}/console/`);
    await page.arrayBuffer();
    expect(page.status).toBe(404);
  });
});
