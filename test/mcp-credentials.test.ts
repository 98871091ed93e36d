import { timestampFromMs } from "@bufbuild/protobuf/wkt";
import { Code } from "@connectrpc/connect";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { MCP_ERRORS, McpError } from "../src/mcp/contract.js";
import type { McpCredentials } from "../src/mcp/credentials/mcp-credentials.js";
import { adminClient } from "./helpers/admin.js";
import { rpcFailure } from "./helpers/clients.js";
import { type Harness, startHarness } from "./helpers/harness.js";
import { dropPrefix, dumpPrefix, inspector, keysUnder, SHARED_REDIS_URL, testPrefix } from "./helpers/redis.js";

const ADMIN_KEY = "sk-test-admin-7c1e5a9d3b2f4680";
const ALICE_KEY = "sk-test-alice-3b8d0f2a6c4e1957";
const BOB_KEY = "sk-test-bob-9e2c4a6f8b0d1357aa";
const SECRET = "mcp-credentials-secret-0123456789abcdef";
const TOKEN_A = "gho_aliceAAAAaaaa1111";
const TOKEN_B = "gho_bobBBBBbbbb2222";
const HOUR = 3_600_000;

/** The McpError a call refused with. */
async function refusal(call: Promise<unknown>): Promise<McpError> {
  try {
    await call;
  } catch (error) {
    if (error instanceof McpError) return error;
    throw error;
  }
  throw new Error("expected a McpError");
}

/** A gateway with two configured keys, two per-key servers and a static one, its tokens in `store`. */
async function gateway(store: "redis" | "memory", prefix: string, clock: { now: number }): Promise<Harness> {
  return startHarness({
    // The session secret from the environment: the endpoint's Redis fallback writes before the store connects (reported to mcp-endpoint).
    env: { SLUICE_ADMIN_KEY: ADMIN_KEY, ALICE_KEY, BOB_KEY, MCP_CREDENTIALS_KEY: SECRET, SLUICE_MCP_SESSION_SECRET: "mcp-credentials-session-secret-0123456789" },
    auth: {
      adminKeyEnv: "SLUICE_ADMIN_KEY",
      keys: [
        { name: "alice", keyEnv: "ALICE_KEY" },
        { name: "bob", keyEnv: "BOB_KEY" },
      ],
    },
    ...(store === "redis" ? { store: { redis: { url: SHARED_REDIS_URL, prefix, failMode: "closed", timeoutMs: 5_000 } } } : {}),
    storeClock: () => clock.now,
    mcp: {
      credentialsKeyEnv: "MCP_CREDENTIALS_KEY",
      servers: {
        tickets: { http: { url: "http://127.0.0.1:9/mcp" }, auth: { mode: "per-key", audience: "https://tickets.example/" } },
        docs: { http: { url: "http://127.0.0.1:9/docs/mcp" }, auth: { mode: "per-key" } },
        search: { http: { url: "http://127.0.0.1:9/search/mcp", headersFromEnv: { Authorization: "SLUICE_ADMIN_KEY" } } },
      },
    },
  });
}

async function keyIds(h: Harness): Promise<Record<string, string>> {
  return Object.fromEntries((await adminClient(h.url, ADMIN_KEY).listKeys({})).keys.map((k) => [k.name, k.id]));
}

describe.each(["redis", "memory"] as const)("per-key MCP credentials (%s store)", (store) => {
  const prefix = testPrefix("mcp-credentials");
  const clock = { now: Date.parse("2026-12-07T00:00:00Z") };
  let h: Harness;
  let credentials: McpCredentials;
  let ids: Record<string, string>;
  beforeAll(async () => {
    h = await gateway(store, prefix, clock);
    credentials = h.sluice.mcpCredentials!;
    ids = await keyIds(h);
  });
  afterAll(async () => {
    await h.close();
    await dropPrefix(prefix);
  });

  it("needs the admin key; a virtual key is not one", async () => {
    for (const client of [adminClient(h.url), adminClient(h.url, ALICE_KEY)]) {
      expect((await rpcFailure(client.setMcpCredential({ keyId: ids.alice!, server: "tickets", accessToken: TOKEN_A, expiresAt: timestampFromMs(clock.now + HOUR) }))).code).toBe(Code.Unauthenticated);
      expect((await rpcFailure(client.deleteMcpCredential({ keyId: ids.alice!, server: "tickets" }))).code).toBe(Code.Unauthenticated);
    }
    await expect(refusal(credentials.credentialFor(ids.alice!, "tickets"))).resolves.toMatchObject({ code: MCP_ERRORS.refused });
  });

  it("gives each key its own token and never another's; a static server has none; a key without one is refused with what to do", async () => {
    const admin = adminClient(h.url, ADMIN_KEY);
    const setA = await admin.setMcpCredential({ keyId: ids.alice!, server: "tickets", accessToken: TOKEN_A, expiresAt: timestampFromMs(clock.now + HOUR) });
    expect(setA).toMatchObject({ keyId: ids.alice, server: "tickets", audience: "https://tickets.example/" });
    // What the answer says is where the token is bound, never the token.
    expect(JSON.stringify(setA, (_, v: unknown) => (typeof v === "bigint" ? String(v) : v))).not.toContain(TOKEN_A);
    await admin.setMcpCredential({ keyId: ids.bob!, server: "tickets", accessToken: TOKEN_B, expiresAt: timestampFromMs(clock.now + HOUR) });

    expect(await credentials.credentialFor(ids.alice!, "tickets")).toBe(TOKEN_A);
    expect(await credentials.credentialFor(ids.bob!, "tickets")).toBe(TOKEN_B);
    // The gateway's own secret goes with the static server's calls: no bearer from here.
    expect(await credentials.credentialFor(ids.alice!, "search")).toBeUndefined();
    // Alice's token at tickets is not hers at docs (another server, another audience).
    const missing = await refusal(credentials.credentialFor(ids.alice!, "docs"));
    expect(missing.code).toBe(MCP_ERRORS.refused);
    expect(missing.message).toContain("SetMcpCredential");
    expect(missing.message).toContain(ids.alice);
    expect(missing.message).not.toContain(TOKEN_A);
    // Authentication off (no key): nobody's token.
    await expect(refusal(credentials.credentialFor(undefined, "tickets"))).resolves.toMatchObject({ code: MCP_ERRORS.refused });
    expect(h.logText()).not.toContain(TOKEN_A);
    expect(h.logText()).not.toContain(TOKEN_B);
  });

  it("binds a token to the key's id: a key created later under a revoked key's name sees nothing", async () => {
    const admin = adminClient(h.url, ADMIN_KEY);
    const first = await admin.createKey({ name: "carol" });
    await admin.setMcpCredential({ keyId: first.info!.id, server: "tickets", accessToken: "carol-first-token", expiresAt: timestampFromMs(clock.now + HOUR) });
    expect(await credentials.credentialFor(first.info!.id, "tickets")).toBe("carol-first-token");
    await admin.revokeKey({ name: "carol" });
    const second = await admin.createKey({ name: "carol" });
    expect(second.info!.id).not.toBe(first.info!.id);
    await expect(refusal(credentials.credentialFor(second.info!.id, "tickets"))).resolves.toMatchObject({ code: MCP_ERRORS.refused });
    // Nor can a token be set for a key that is gone.
    expect((await rpcFailure(admin.setMcpCredential({ keyId: first.info!.id, server: "tickets", accessToken: "x", expiresAt: timestampFromMs(clock.now + HOUR) }))).code).toBe(Code.NotFound);
  });

  it("never uses an expired token, and forgets a deleted one", async () => {
    const admin = adminClient(h.url, ADMIN_KEY);
    await admin.setMcpCredential({ keyId: ids.bob!, server: "docs", accessToken: "bob-docs-token", expiresAt: timestampFromMs(clock.now + 60_000) });
    expect(await credentials.credentialFor(ids.bob!, "docs")).toBe("bob-docs-token");
    clock.now += 60_000;
    await expect(refusal(credentials.credentialFor(ids.bob!, "docs"))).resolves.toMatchObject({ code: MCP_ERRORS.refused });

    expect((await admin.deleteMcpCredential({ keyId: ids.bob!, server: "tickets" })).deleted).toBe(true);
    await expect(refusal(credentials.credentialFor(ids.bob!, "tickets"))).resolves.toMatchObject({ code: MCP_ERRORS.refused });
    expect((await admin.deleteMcpCredential({ keyId: ids.bob!, server: "tickets" })).deleted).toBe(false);
    // Alice's is untouched.
    expect(await credentials.credentialFor(ids.alice!, "tickets")).toBe(TOKEN_A);
  });

  it("checks what it is given, and never repeats the token in a refusal", async () => {
    const admin = adminClient(h.url, ADMIN_KEY);
    const later = timestampFromMs(clock.now + HOUR);
    const cases = [
      [{ keyId: ids.alice!, server: "search", accessToken: TOKEN_A, expiresAt: later }, Code.FailedPrecondition],
      [{ keyId: ids.alice!, server: "nowhere", accessToken: TOKEN_A, expiresAt: later }, Code.NotFound],
      [{ keyId: "alice", server: "tickets", accessToken: TOKEN_A, expiresAt: later }, Code.InvalidArgument],
      [{ keyId: ids.alice!, server: "tickets", accessToken: `${TOKEN_A} with spaces`, expiresAt: later }, Code.InvalidArgument],
      [{ keyId: ids.alice!, server: "tickets", accessToken: `${TOKEN_A}\r\nX-Injected: 1`, expiresAt: later }, Code.InvalidArgument],
      [{ keyId: ids.alice!, server: "tickets", accessToken: "x".repeat(8193), expiresAt: later }, Code.InvalidArgument],
      [{ keyId: ids.alice!, server: "tickets", accessToken: TOKEN_A, expiresAt: timestampFromMs(clock.now - 1) }, Code.InvalidArgument],
      [{ keyId: ids.alice!, server: "tickets", accessToken: TOKEN_A }, Code.InvalidArgument],
    ] as const;
    for (const [request, code] of cases) {
      const failure = await rpcFailure(admin.setMcpCredential(request));
      expect(failure.code, JSON.stringify(request.server)).toBe(code);
      expect(failure.rawMessage).not.toContain(TOKEN_A);
    }
    // None of them replaced the token set before.
    expect(await credentials.credentialFor(ids.alice!, "tickets")).toBe(TOKEN_A);
  });
});

describe("per-key MCP credentials in Redis", () => {
  const prefix = testPrefix("mcp-credentials-sealed");
  const clock = { now: Date.parse("2026-12-07T00:00:00Z") };
  let h: Harness;
  let credentials: McpCredentials;
  let ids: Record<string, string>;
  beforeAll(async () => {
    h = await gateway("redis", prefix, clock);
    credentials = h.sluice.mcpCredentials!;
    ids = await keyIds(h);
    const admin = adminClient(h.url, ADMIN_KEY);
    await admin.setMcpCredential({ keyId: ids.alice!, server: "tickets", accessToken: TOKEN_A, expiresAt: timestampFromMs(clock.now + HOUR) });
    await admin.setMcpCredential({ keyId: ids.alice!, server: "docs", accessToken: TOKEN_A, expiresAt: timestampFromMs(clock.now + HOUR) });
  });
  afterAll(async () => {
    await h.close();
    await dropPrefix(prefix);
  });

  it("holds tokens sealed: the store reads no token, and an entry moved under another key's name opens for nobody", async () => {
    const dump = await dumpPrefix(prefix);
    expect(dump).not.toContain(TOKEN_A);
    expect(dump).not.toContain(Buffer.from(TOKEN_A).toString("base64"));
    expect(dump).not.toContain(ids.alice);
    expect(dump).not.toContain("tickets");
    // Bob's token for tickets (set again), copied over Alice's entry: it does not open as hers.
    const admin = adminClient(h.url, ADMIN_KEY);
    const redis = await inspector();
    try {
      const before = new Set(await keysUnder(redis, `${prefix}mcp:credential:`));
      await admin.setMcpCredential({ keyId: ids.bob!, server: "tickets", accessToken: TOKEN_B, expiresAt: timestampFromMs(clock.now + HOUR) });
      const after = await keysUnder(redis, `${prefix}mcp:credential:`);
      const bobs = after.find((k) => !before.has(k))!;
      expect(await credentials.credentialFor(ids.alice!, "tickets")).toBe(TOKEN_A);
      // Whichever of the older entries is Alice's, Bob's sealed token in its place does not open as hers.
      let refused = 0;
      for (const key of before) {
        const kept = await redis.get(key);
        await redis.set(key, (await redis.get(bobs))!, { PX: HOUR });
        const opened = await credentials.credentialFor(ids.alice!, "tickets").catch((error: unknown) => error);
        expect(opened).not.toBe(TOKEN_B);
        if (opened instanceof McpError) refused++;
        await redis.set(key, kept!, { PX: HOUR });
      }
      // Exactly one of them was hers at tickets (the other: docs).
      expect(refused).toBe(1);
      expect(await credentials.credentialFor(ids.alice!, "tickets")).toBe(TOKEN_A);
    } finally {
      redis.destroy();
    }
  });
});
