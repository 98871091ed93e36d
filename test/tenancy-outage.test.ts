import { Code, ConnectError } from "@connectrpc/connect";
import { afterAll, afterEach, describe, expect, it } from "vitest";
import { sha256Hex } from "../src/config/key-hash.js";
import { subjectOf } from "../src/store/tenant-store.js";
import { keyId } from "../src/tenancy/principal.js";
import { chatClient, collect, transports, userRequest } from "./helpers/clients.js";
import { type Harness, startHarness } from "./helpers/harness.js";
import { inspector, type OwnRedis, type StallingProxy, startOwnRedis, startStallingProxy, testPrefix, usageRecords } from "./helpers/redis.js";
import { type TenancyEvents, tenancyEvents } from "./helpers/tenancy-events.js";

/** Where the key's state is kept in Redis: its id, not its name "k". */
const K = (): string => subjectOf({ level: "key", id: keyId(sha256Hex(KEY)) });
const KEY = "sk-test-outage-5a7c9e1b3d2f4068";
const running: Array<{ h: Harness; redis: OwnRedis }> = [];

/** A gateway on a Redis of its own (this test kills it), with a 10 requests/minute key and two replicas' worth of fallback. */
async function setup(store: { failMode: "open" | "closed"; bufferMax?: number; timeoutMs?: number }, through?: (redis: OwnRedis) => Promise<string>) {
  const redis = await startOwnRedis();
  const url = through ? await through(redis) : redis.url;
  const events = tenancyEvents();
  const prefix = testPrefix("outage");
  const h = await startHarness({
    models: { sim: "sim-1?tokens=3" },
    env: { OUTAGE_KEY: KEY },
    auth: { keys: [{ name: "k", keyEnv: "OUTAGE_KEY", limits: { requestsPerMinute: 10 } }] },
    store: { redis: { url, prefix, replicas: 2, timeoutMs: store.timeoutMs ?? 200, failMode: store.failMode, bufferMax: store.bufferMax ?? 100 } },
    observer: events.observer,
  });
  running.push({ h, redis });
  await h.waitForLog((l) => l.event === "store.connected");
  return { h, redis, events, prefix };
}

afterEach(async () => {
  for (const { h, redis } of running.splice(0)) {
    await h.close();
    await redis.kill();
  }
});
afterAll(async () => {
  for (const { h, redis } of running.splice(0)) {
    await h.close();
    await redis.kill();
  }
});

let ids = 0;
async function stream(h: Harness, id = `outage-${++ids}-${Date.now()}`): Promise<{ id: string; code: Code | "ok" }> {
  try {
    const messages = await collect(chatClient(transports(h.url)["grpc (connect-node, h2)"]!).streamChat(userRequest("sim", "hi"), { headers: { authorization: `Bearer ${KEY}`, "x-request-id": id } }));
    return { id, code: messages.at(-1)?.delta.case === "finish" ? "ok" : Code.Unknown };
  } catch (e) {
    return { id, code: ConnectError.from(e).code };
  }
}

async function readyz(h: Harness): Promise<{ status: number; body: unknown }> {
  const res = await fetch(`${h.url}/readyz`);
  return { status: res.status, body: await res.json() };
}

const storedRecords = (redis: OwnRedis, prefix: string) => usageRecords(prefix, redis.url);

const outcome = (events: TenancyEvents, id: string) => events.usage.filter((e) => e.record.requestId === id).map((e) => e.result);

describe("Redis killed mid-test, failing open", () => {
  it("keeps streams flowing on per-replica limits, buffers their usage, and flushes all of it when Redis returns", async () => {
    const { h, redis, events, prefix } = await setup({ failMode: "open" });
    const before = [await stream(h), await stream(h)];
    expect(before.map((r) => r.code)).toEqual(["ok", "ok"]);
    for (const r of before) await events.recorded(r.id);

    await redis.kill();
    // Configured 10/min over 2 replicas: this replica alone admits 5 while Redis is away.
    const during = [];
    for (let i = 0; i < 6; i++) during.push(await stream(h));
    expect(during.map((r) => r.code)).toEqual(["ok", "ok", "ok", "ok", "ok", Code.ResourceExhausted]);
    const served = during.filter((r) => r.code === "ok");
    for (const r of served) await events.recorded(r.id, (result) => result === "buffered");
    expect(events.fallbacks.admit).toBe(6);
    await h.waitForLog((l) => l.event === "store.down");

    await redis.restart();
    for (const r of served) await events.recorded(r.id, (result) => result === "flushed");
    const flushedLine = await h.waitForLog((l) => l.event === "usage.flushed");
    expect(flushedLine.records).toBe(5);
    // A fresh Redis (no persistence): exactly the buffered records, each once.
    const records = await storedRecords(redis, prefix);
    expect(records.map((r) => r.requestId).sort()).toEqual(served.map((r) => r.id).sort());
    expect(records.every((r) => r.key === "k" && r.outcome === "completed" && r.outputTokens === 3)).toBe(true);
    for (const r of served) expect(outcome(events, r.id)).toEqual(["buffered", "flushed"]);

    // And Redis is the one limit again.
    expect((await stream(h)).code).toBe("ok");
    await h.waitForLog((l) => l.event === "store.up");
  });

  it("counts, logs and reports what does not fit in the buffer", async () => {
    const { h, redis, events } = await setup({ failMode: "open", bufferMax: 1 });
    await redis.kill();
    const a = await stream(h);
    const b = await stream(h);
    expect([a.code, b.code]).toEqual(["ok", "ok"]);
    expect(await events.recorded(a.id, (r) => r === "buffered")).toBeDefined();
    expect(await events.recorded(b.id, (r) => r === "dropped")).toBeDefined();
    const dropped = await h.waitForLog((l) => l.event === "usage.dropped");
    expect(dropped).toMatchObject({ requestId: b.id, key: "k", droppedTotal: 1 });
  });
});

describe("Redis slow (blocked), failing open", () => {
  it("never holds a stream longer than the silence that means down (downAfterTimeouts × timeoutMs), and flushes once Redis answers", async () => {
    let proxy: StallingProxy | undefined;
    const { h, redis, events, prefix } = await setup({ failMode: "open" }, async (r) => {
      proxy = await startStallingProxy(r.port);
      return proxy.url;
    });
    try {
      // Connected, but nothing comes back: a Redis that is slow, not down.
      proxy!.stall();
      const r = await stream(h);
      expect(r.code).toBe("ok");
      expect(events.fallbacks.admit).toBe(1);
      await events.recorded(r.id, (result) => result === "buffered");
      proxy!.release();
      await events.recorded(r.id, (result) => result === "flushed");
      expect((await storedRecords(redis, prefix)).map((x) => x.requestId)).toEqual([r.id]);
      // The admission that timed out still ran in Redis, late; the flushed settle released what it held there.
      const client = await inspector(redis.url);
      expect(await client.zCard(`${prefix}fly:{${K()}}`)).toBe(0);
      client.destroy();
    } finally {
      await proxy?.close();
    }
  });
});

describe("Redis killed, failing closed", () => {
  it("refuses new streams with UNAVAILABLE and reports not ready until Redis returns", async () => {
    const { h, redis } = await setup({ failMode: "closed" });
    expect(await readyz(h)).toEqual({ status: 200, body: { status: "ready" } });
    expect((await stream(h)).code).toBe("ok");
    await redis.kill();
    expect((await stream(h)).code).toBe(Code.Unavailable);
    await h.waitForLog((l) => l.event === "server.readiness" && l.ready === false);
    expect(await readyz(h)).toEqual({ status: 503, body: { status: "waiting", waitingFor: ["store"] } });
    await redis.restart();
    await h.waitForLog((l) => l.event === "store.connected" && h.logs().filter((x) => x.event === "store.connected").length >= 2);
    // Ready again after the outage, not the line the gateway logged at start.
    const readyAfterOutage = () => {
      const lines = h.logs();
      const notReadyAt = lines.findIndex((l) => l.event === "server.readiness" && l.ready === false);
      return lines.slice(notReadyAt + 1).some((l) => l.event === "server.readiness" && l.ready === true);
    };
    await h.waitForLog(readyAfterOutage);
    expect(await readyz(h)).toEqual({ status: 200, body: { status: "ready" } });
    expect((await stream(h)).code).toBe("ok");
  });
});
