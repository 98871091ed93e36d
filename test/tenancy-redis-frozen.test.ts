import { afterAll, describe, expect, it, vi } from "vitest";
import { adminClient } from "./helpers/admin.js";
import { baseUrlFor, type Harness, startHarness } from "./helpers/harness.js";
import { type OwnRedis, startOwnRedis, testPrefix } from "./helpers/redis.js";

/**
 * A Redis frozen with SIGSTOP: its TCP connections stay open and nothing
 * answers. A fail-closed replica takes itself out of rotation (readiness
 * follows the store's answers, not only the connection) and comes back
 * when Redis answers; a runtime key created by CreateKey stays valid on
 * every replica whatever the store's speed (served on the fallback share,
 * or refused as unavailable, never as an invalid key).
 */

const ADMIN_KEY = "sk-test-admin-frozen-1c3e5a7b9d2f4068";
const started: Harness[] = [];
const redises: OwnRedis[] = [];

afterAll(async () => {
  for (const r of redises) r.thaw();
  for (const h of started) await h.close();
  for (const r of redises) await r.kill();
});

async function gateway(redis: OwnRedis, prefix: string, failMode: "open" | "closed"): Promise<Harness> {
  const h = await startHarness({
    routing: (sim) => ({
      providers: { simulator: { kind: "openai", baseUrl: baseUrlFor(sim, "openai"), breaker: { failures: 10_000 } } },
      models: { sim: { provider: "simulator", model: "sim-1?tokens=2" } },
    }),
    env: { ADMIN_KEY },
    auth: { adminKeyEnv: "ADMIN_KEY" },
    store: { redis: { url: redis.url, prefix, failMode, timeoutMs: 100, downAfterTimeouts: 3, replicas: 2 } },
  });
  started.push(h);
  return h;
}

async function chat(h: Harness, key: string) {
  const res = await fetch(`${h.url}/v1/chat/completions`, {
    method: "POST",
    headers: { "content-type": "application/json", authorization: `Bearer ${key}` },
    body: JSON.stringify({ model: "sim", max_tokens: 5, messages: [{ role: "user", content: "hi" }] }),
  });
  return { status: res.status, body: (await res.json()) as { error?: { code?: string } } };
}

describe("a fail-closed replica while Redis is frozen", () => {
  it("turns not ready once Redis stops answering, though the connection stays open, and ready again when it answers", async () => {
    const redis = await startOwnRedis();
    redises.push(redis);
    const h = await gateway(redis, testPrefix("frozen-ready"), "closed");
    const created = await adminClient(h.url, ADMIN_KEY).createKey({ name: "frozen-ready", models: ["sim"] });
    expect((await chat(h, created.key)).status).toBe(200);
    expect((await fetch(`${h.url}/readyz`)).status).toBe(200);

    redis.freeze();
    const refused = await chat(h, created.key);
    expect(refused.status).toBe(503);
    // Every stream would be refused like this one: a load balancer must stop sending them here.
    await vi.waitFor(async () => expect((await fetch(`${h.url}/readyz`)).status).toBe(503), { timeout: 10_000, interval: 20 });
    expect(await (await fetch(`${h.url}/readyz`)).json()).toMatchObject({ waitingFor: ["store"] });
    await h.waitForLog((l) => l.event === "server.readiness" && l.ready === false);

    redis.thaw();
    // Nothing is sent to a replica that is not ready: its own reads of the store find Redis back.
    await vi.waitFor(async () => expect((await fetch(`${h.url}/readyz`)).status).toBe(200), { timeout: 10_000, interval: 20 });
    expect((await chat(h, created.key)).status).toBe(200);
  });
});

describe("a runtime key while Redis is frozen", () => {
  it("is served on the replica's share where the replica knows it, and refused as unavailable (503), never as invalid (401), where it does not", async () => {
    const redis = await startOwnRedis();
    redises.push(redis);
    const prefix = testPrefix("frozen-key");
    const a = await gateway(redis, prefix, "open");
    // Failing open, a replica serves before its store connects; the admin service needs it.
    await a.waitForLog((l) => l.event === "store.connected");
    const created = await adminClient(a.url, ADMIN_KEY).createKey({ name: "frozen-key", models: ["sim"] });
    expect((await chat(a, created.key)).status).toBe(200);

    redis.freeze();
    // Replica a knows the key from its copy: the fallback admits it on its share, as for a configured key.
    const known = await chat(a, created.key);
    expect(known.status).toBe(200);
    await a.waitForLog((l) => l.event === "store.down");

    // Replica b starts while Redis is frozen: it cannot read the runtime keys, so it cannot tell a valid one from an invalid one.
    const b = await gateway(redis, prefix, "open");
    const unknown = await chat(b, created.key);
    expect(unknown.status).toBe(503);
    expect(unknown.body.error?.code).not.toBe("invalid_api_key");

    redis.thaw();
    await vi.waitFor(async () => expect((await chat(b, created.key)).status).toBe(200), { timeout: 10_000, interval: 50 });
    // And with the keys read, an unknown key is invalid again.
    expect((await chat(b, "sk-sluice-not-a-key-0000000000000000")).status).toBe(401);
  });
});
