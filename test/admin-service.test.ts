import { execFile } from "node:child_process";
import { promisify } from "node:util";
import { timestampMs } from "@bufbuild/protobuf/wkt";
import { Code } from "@connectrpc/connect";
import OpenAI from "openai";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { KeySource, Period } from "../gen/sluice/admin/v1/admin_service_pb.js";
import { adminClient } from "./helpers/admin.js";
import { chatClient, collect, rpcFailure, transports, userRequest } from "./helpers/clients.js";
import { type Harness, startHarness } from "./helpers/harness.js";
import { tenancyEvents } from "./helpers/tenancy-events.js";

const ADMIN_KEY = "sk-test-admin-1a3c5e7f9b2d4068";
const CONFIG_KEY = "sk-test-config-0f2e4d6c8b1a3957";
const events = tenancyEvents();
let h: Harness;

beforeAll(async () => {
  h = await startHarness({
    models: { sim: "sim-1?tokens=3", other: "sim-1?tokens=2" },
    env: { SLUICE_ADMIN_KEY: ADMIN_KEY, CONFIG_KEY },
    // No store: runtime keys live in process, and behave the same.
    auth: { adminKeyEnv: "SLUICE_ADMIN_KEY", keys: [{ name: "configured", keyEnv: "CONFIG_KEY", budget: { usd: 5, period: "week" } }] },
    observer: events.observer,
  });
});
afterAll(() => h.close());

describe("the admin service", () => {
  it("needs the admin key on every method; a virtual key is not one", async () => {
    for (const client of [adminClient(h.url), adminClient(h.url, "sk-test-wrong-00000000000000"), adminClient(h.url, CONFIG_KEY)]) {
      expect((await rpcFailure(client.listKeys({}))).code).toBe(Code.Unauthenticated);
      expect((await rpcFailure(client.createKey({ name: "x" }))).code).toBe(Code.Unauthenticated);
      expect((await rpcFailure(client.revokeKey({ name: "x" }))).code).toBe(Code.Unauthenticated);
      expect((await rpcFailure(client.getUsage({ name: "x" }))).code).toBe(Code.Unauthenticated);
    }
  });

  it("creates a key that works like a configured one, shows it once, lists it without it, and revokes it", async () => {
    const admin = adminClient(h.url, ADMIN_KEY);
    const created = await admin.createKey({ name: "team-c", models: ["sim"], limits: { requestsPerMinute: 2 }, budget: { usdMicros: 3_000_000n, period: Period.DAY } });
    expect(created.key).toMatch(/^sk-sluice-[A-Za-z0-9_-]{43}$/);
    expect(created.info).toMatchObject({ name: "team-c", models: ["sim"], source: KeySource.RUNTIME, limits: { requestsPerMinute: 2 }, budget: { usdMicros: 3_000_000n, period: Period.DAY } });

    const listed = await admin.listKeys({});
    expect(listed.keys.map((k) => [k.name, k.source])).toEqual([
      ["configured", KeySource.CONFIG],
      ["team-c", KeySource.RUNTIME],
    ]);
    expect(JSON.stringify(listed, (_, v: unknown) => (typeof v === "bigint" ? String(v) : v))).not.toContain(created.key);

    // The key works on both edges, within its allowlist and its limits.
    const grpc = chatClient(transports(h.url)["grpc (connect-node, h2)"]!);
    const headers = { authorization: `Bearer ${created.key}` };
    await collect(grpc.streamChat(userRequest("sim", "hi"), { headers: { ...headers, "x-request-id": "admin-rt-1" } }));
    expect((await rpcFailure(collect(grpc.streamChat(userRequest("other", "hi"), { headers })))).code).toBe(Code.PermissionDenied);
    const sdk = new OpenAI({ baseURL: `${h.url}/v1`, apiKey: created.key, maxRetries: 0 });
    await sdk.chat.completions.create({ model: "sim", messages: [{ role: "user", content: "hi" }] }, { headers: { "x-request-id": "admin-rt-2" } });
    await expect(sdk.chat.completions.create({ model: "sim", messages: [{ role: "user", content: "hi" }] })).rejects.toMatchObject({ status: 429 });

    // Its usage, per period.
    await events.recorded("admin-rt-1");
    await events.recorded("admin-rt-2");
    const usage = await admin.getUsage({ name: "team-c" });
    expect(usage.period).toBe(Period.DAY);
    expect(usage.requests).toBe(2n);
    expect(usage.outputTokens).toBe(6n);
    expect(usage.budgetUsdMicros).toBe(3_000_000n);
    expect(timestampMs(usage.periodEnd!) - timestampMs(usage.periodStart!)).toBe(86_400_000);
    expect((await admin.getUsage({ name: "team-c", period: Period.MONTH })).requests).toBe(2n);

    expect((await admin.revokeKey({ name: "team-c" })).key?.name).toBe("team-c");
    expect((await rpcFailure(collect(grpc.streamChat(userRequest("sim", "hi"), { headers })))).code).toBe(Code.Unauthenticated);
    expect((await admin.listKeys({})).keys.map((k) => k.name)).toEqual(["configured"]);
    // Usage outlives the key, under its id; its name names no key now.
    expect(await admin.getUsage({ id: created.info!.id, period: Period.DAY })).toMatchObject({ name: "", id: created.info!.id, requests: 2n });
    expect((await rpcFailure(admin.getUsage({ name: "team-c", period: Period.DAY }))).code).toBe(Code.NotFound);
  });

  it("checks what it is given as the configuration is checked", async () => {
    const admin = adminClient(h.url, ADMIN_KEY);
    const bad = async (request: Parameters<typeof admin.createKey>[0]) => rpcFailure(admin.createKey(request));
    expect((await bad({ name: "no spaces" })).code).toBe(Code.InvalidArgument);
    expect((await bad({ name: "x".repeat(65) })).code).toBe(Code.InvalidArgument);
    expect((await bad({ name: "ok", models: ["nope"] })).rawMessage).toMatch(/unknown model alias "nope"/);
    expect((await bad({ name: "ok", limits: { requestsPerMinute: 0 } })).code).toBe(Code.InvalidArgument);
    expect((await bad({ name: "ok", budget: { usdMicros: 0n } })).code).toBe(Code.InvalidArgument);
    expect((await bad({ name: "configured" })).code).toBe(Code.AlreadyExists);
    await admin.createKey({ name: "twice" });
    expect((await bad({ name: "twice" })).code).toBe(Code.AlreadyExists);
    expect((await rpcFailure(admin.revokeKey({ name: "configured" }))).code).toBe(Code.InvalidArgument);
    expect((await rpcFailure(admin.revokeKey({ name: "never-was" }))).code).toBe(Code.NotFound);
    await admin.revokeKey({ name: "twice" });
  });

  it("is listed by server reflection", async () => {
    const { stdout } = await promisify(execFile)("node_modules/.bin/buf", ["curl", "--http2-prior-knowledge", "--list-services", h.url], { timeout: 60_000 });
    expect(stdout.split("\n")).toContain("sluice.admin.v1.AdminService");
  });
});

describe("without an admin key", () => {
  it("the admin service is not served", async () => {
    const plain = await startHarness({ models: { sim: "sim-1" } });
    try {
      expect((await rpcFailure(adminClient(plain.url, ADMIN_KEY).listKeys({}))).code).toBe(Code.Unimplemented);
    } finally {
      await plain.close();
    }
  });
});
