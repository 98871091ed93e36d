import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { adminClient } from "./helpers/admin.js";
import { baseUrlFor, type Harness, startHarness } from "./helpers/harness.js";
import { dropPrefix, SHARED_REDIS_URL, testPrefix } from "./helpers/redis.js";

/**
 * Runtime settings changed on one replica hold on another from its very
 * next admission (docs/tenancy.md, "The admin service"): the admission
 * script compares the settings version the replica's copy was read at
 * with Redis's, and a replica whose copy is older re-reads it and asks
 * again, instead of admitting on settings up to a poll (250 ms) old.
 */

const ADMIN_KEY = "sk-test-admin-settings-3e5a7c9b1d2f4068";
const prefix = testPrefix("settings");
const replicas: Harness[] = [];

beforeAll(async () => {
  for (let i = 0; i < 2; i++) {
    replicas.push(
      await startHarness({
        routing: (sim) => ({
          providers: { simulator: { kind: "openai", baseUrl: baseUrlFor(sim, "openai"), breaker: { failures: 10_000 } } },
          models: { sim: { provider: "simulator", model: "sim-1?tokens=2" } },
        }),
        env: { ADMIN_KEY },
        auth: { adminKeyEnv: "ADMIN_KEY" },
        store: { redis: { url: SHARED_REDIS_URL, prefix, failMode: "closed", timeoutMs: 5_000 } },
      }),
    );
  }
});
afterAll(async () => {
  for (const h of replicas) await h.close();
  await dropPrefix(prefix);
});

async function chat(h: Harness, key: string) {
  const res = await fetch(`${h.url}/v1/chat/completions`, {
    method: "POST",
    headers: { "content-type": "application/json", authorization: `Bearer ${key}` },
    body: JSON.stringify({ model: "sim", max_tokens: 5, messages: [{ role: "user", content: "hi" }] }),
  });
  return { status: res.status, body: (await res.json()) as { error?: { message?: string } } };
}

describe("a runtime change made on one replica", () => {
  it("holds on the other from its next admission: a key's limits, its team, and the team's limits", async () => {
    const [a, b] = replicas as [Harness, Harness];
    const admin = adminClient(a.url, ADMIN_KEY);
    const { key } = await admin.createKey({ name: "moving", limits: { requestsPerMinute: 100 } });
    await admin.createTeam({ name: "squad", limits: { requestsPerMinute: 100 } });
    // b knows the key now (and counts one request in its window).
    expect((await chat(b, key)).status).toBe(200);

    await admin.updateKey({ name: "moving", limits: { requestsPerMinute: 1 }, updateMask: { paths: ["limits"] } });
    const limited = await chat(b, key);
    expect(limited.status).toBe(429);
    expect(limited.body.error?.message).toMatch(/^key moving is over its limit of 1 requests per minute/);

    await admin.updateKey({ name: "moving", limits: { requestsPerMinute: 100 }, team: "squad", updateMask: { paths: ["limits", "team"] } });
    expect((await chat(b, key)).status).toBe(200);
    await admin.updateTeam({ name: "squad", limits: { requestsPerMinute: 1 }, updateMask: { paths: ["limits"] } });
    const team = await chat(b, key);
    expect(team.status).toBe(429);
    expect(team.body.error?.message).toMatch(/^team squad is over its limit of 1 requests per minute/);

    // Revoked on a: refused on b at once (this was always so: the same script checks it).
    await admin.revokeKey({ name: "moving" });
    expect((await chat(b, key)).status).toBe(401);
  });
});
