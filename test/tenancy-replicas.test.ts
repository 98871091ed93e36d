import { Code, ConnectError } from "@connectrpc/connect";
import { createGrpcTransport } from "@connectrpc/connect-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { sha256Hex } from "../src/config/key-hash.js";
import type { ConfigInput } from "../src/config/schema.js";
import { type Simulator, startSimulator } from "../src/simulator/server.js";
import { subjectOf } from "../src/store/tenant-store.js";
import { keyId } from "../src/tenancy/principal.js";
import { adminClient } from "./helpers/admin.js";
import { chatClient, collect, userRequest } from "./helpers/clients.js";
import { type GatewayProcess, startGatewayProcess } from "./helpers/gateway-process.js";
import { dropPrefix, dumpPrefix, inspector, SHARED_REDIS_URL, testPrefix, usageRecords } from "./helpers/redis.js";

const SHARED_KEY = "sk-test-shared-3b5d7f9a1c2e4068";
const ADMIN_KEY = "sk-test-admin-6c8e0a2b4d1f3957";
const prefix = testPrefix("replicas");

let sim: Simulator;
let gateways: GatewayProcess[] = [];

beforeAll(async () => {
  sim = await startSimulator();
  const config: ConfigInput = {
    log: { level: "debug" },
    providers: { simulator: { kind: "openai", baseUrl: sim.openAiBaseUrl } },
    models: { sim: { provider: "simulator", model: "sim-1?tokens=2" } },
    auth: {
      adminKeyEnv: "SLUICE_ADMIN_KEY",
      keys: [{ name: "shared", sha256: sha256Hex(SHARED_KEY), limits: { requestsPerMinute: 30 } }],
    },
    // Closed, with a long timeout: any fallback to per-replica limits would fail the test instead of passing it by luck.
    store: { redis: { url: SHARED_REDIS_URL, prefix, failMode: "closed", timeoutMs: 5_000, replicas: 3 } },
  };
  gateways = await Promise.all([0, 1, 2].map(() => startGatewayProcess(config, { env: { ...process.env, SLUICE_ADMIN_KEY: ADMIN_KEY } })));
  // Failing closed, a replica refuses keyed requests until its store connects; a load balancer would wait for readiness.
  await Promise.all(gateways.map((g) => g.waitForLine((l) => l.event === "server.readiness" && l.ready === true)));
});

afterAll(async () => {
  await Promise.all(gateways.map((g) => g.stop()));
  await sim?.close();
  await dropPrefix(prefix);
});

const client = (g: GatewayProcess) => chatClient(createGrpcTransport({ baseUrl: g.url }));
const bearer = (key: string) => ({ authorization: `Bearer ${key}` });

async function outcome(call: Promise<unknown>): Promise<Code | "ok"> {
  try {
    await call;
    return "ok";
  } catch (e) {
    return ConnectError.from(e).code;
  }
}

describe("three gateway processes sharing one Redis", () => {
  it("hold a 30 requests/minute key to exactly 30 successes across them", async () => {
    const sent = Array.from({ length: 60 }, (_, i) => ({ gateway: gateways[i % 3]!, id: `replicas-${i}-${Date.now()}` }));
    const results = await Promise.all(sent.map(({ gateway, id }) => outcome(collect(client(gateway).streamChat(userRequest("sim", "hi"), { headers: { ...bearer(SHARED_KEY), "x-request-id": id } })))));
    expect(results.filter((r) => r === "ok")).toHaveLength(30);
    expect(results.filter((r) => r === Code.ResourceExhausted)).toHaveLength(30);
    // (Per-replica limits would have let all 60 through: 20 per replica, each under 30.)

    // Every success settles on the replica that served it: one record each, one rollup across all.
    await Promise.all(sent.filter((_, i) => results[i] === "ok").map(({ gateway, id }) => gateway.waitForLine((l) => l.event === "usage.recorded" && l.requestId === id)));
    const redis = await inspector();
    try {
      const records = (await usageRecords(prefix)).filter((r) => r.key === "shared");
      expect(records).toHaveLength(30);
      const day = (await redis.keys(`${prefix}use:{${subjectOf({ level: "key", id: keyId(sha256Hex(SHARED_KEY)) })}}:d*`))[0]!;
      expect(await redis.hGet(day, "requests")).toBe("30");
    } finally {
      redis.destroy();
    }
  });

  it("see a key created on one replica, and refuse it on every replica once it is revoked there", async () => {
    const admin = adminClient(gateways[0]!.url, ADMIN_KEY);
    const created = await admin.createKey({ name: "rotating", models: ["sim"], limits: { requestsPerMinute: 100 } });
    expect(created.key).toMatch(/^sk-sluice-/);
    for (const g of gateways) {
      expect(await outcome(collect(client(g).streamChat(userRequest("sim", "hi"), { headers: bearer(created.key) })))).toBe("ok");
    }
    const listed = await adminClient(gateways[2]!.url, ADMIN_KEY).listKeys({});
    expect(listed.keys.map((k) => k.name)).toEqual(["shared", "rotating"]);

    await admin.revokeKey({ name: "rotating" });
    // Enforced at admission, in the same Redis round trip: no replica's cache stands in the way.
    for (const g of gateways) {
      expect(await outcome(collect(client(g).streamChat(userRequest("sim", "hi"), { headers: bearer(created.key) })))).toBe(Code.Unauthenticated);
    }

    // No key, admin or virtual, anywhere in Redis or in any replica's output.
    const everything = await dumpPrefix(prefix);
    expect(everything).toContain("rotating");
    for (const key of [SHARED_KEY, ADMIN_KEY, created.key]) {
      expect(everything).not.toContain(key);
      for (const g of gateways) {
        expect(JSON.stringify(g.lines())).not.toContain(key);
        expect(g.stderr()).not.toContain(key);
      }
    }
  });
});
