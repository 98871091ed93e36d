import { Code } from "@connectrpc/connect";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { KeySource } from "../gen/sluice/admin/v1/admin_service_pb.js";
import { mcpCallerFor } from "../src/mcp/caller.js";
import { toolGrants } from "../src/mcp/grants.js";
import { createMemoryTenantStore } from "../src/store/memory-tenant-store.js";
import { createRedisTenantStore } from "../src/store/redis-tenant-store.js";
import type { TenantStore } from "../src/store/tenant-store.js";
import { adminClient } from "./helpers/admin.js";
import { rpcFailure } from "./helpers/clients.js";
import { type Harness, startHarness } from "./helpers/harness.js";
import { dropPrefix, SHARED_REDIS_URL, storeClient, testPrefix } from "./helpers/redis.js";

/**
 * Runtime keys, teams and business lines get MCP grants through the admin
 * service (docs/mcp.md, "Grants"): checked with the configuration's own
 * schema, kept in the store with the rest of their settings so that every
 * replica reads them, and carried onto the principal and its levels as
 * configured grants are, so the grants predicate (mcp/grants.ts) sees a
 * change from the next request on.
 */

const ADMIN_KEY = "sk-test-admin-mcp-grants-5b7d9f1a3c2e4068";
const CONFIG_KEY = "sk-test-config-mcp-grants-0a1b2c3d4e5f6789";
const prefix = testPrefix("mcp-grants");
const replicas: Harness[] = [];

beforeAll(async () => {
  for (let i = 0; i < 2; i++) {
    replicas.push(
      await startHarness({
        env: { ADMIN_KEY, CONFIG_KEY },
        auth: { adminKeyEnv: "ADMIN_KEY", keys: [{ name: "configured", keyEnv: "CONFIG_KEY", mcp: { servers: ["gh"], tools: { deny: ["gh_delete*"] } } }] },
        mcp: { servers: { gh: { http: { url: "http://127.0.0.1:9/mcp" } }, fs: { http: { url: "http://127.0.0.1:9/mcp" } } } },
        store: { redis: { url: SHARED_REDIS_URL, prefix, failMode: "closed", timeoutMs: 5_000 } },
      }),
    );
  }
});
afterAll(async () => {
  for (const h of replicas) await h.close();
  await dropPrefix(prefix);
});

/** What the grants predicate answers for a key on a replica, as the MCP edge asks it: the principal as identified, its team and business line as in force there. */
async function granted(h: Harness, key: string, tools: readonly string[]): Promise<string[]> {
  const principal = await h.sluice.tenancy.identify(`Bearer ${key}`, "mcp");
  const grants = toolGrants(mcpCallerFor(principal, h.sluice.tenancy.hierarchy()));
  return tools.filter((name) => grants.tool(name.split("_")[0]!, name));
}

const TOOLS = ["gh_read", "gh_delete_repo", "fs_read", "fs_write"];

describe("MCP grants through the admin service", () => {
  it("are given to a runtime key, team and business line, read back on every replica, updated and cleared", async () => {
    const [a, b] = replicas as [Harness, Harness];
    const admin = adminClient(a.url, ADMIN_KEY);
    const other = adminClient(b.url, ADMIN_KEY);

    const line = await admin.createBusinessLine({ name: "ops", mcp: { servers: { values: ["gh", "fs"] } } });
    expect(line.businessLine?.mcp).toMatchObject({ servers: { values: ["gh", "fs"] }, deny: [] });
    expect(line.businessLine?.mcp?.allow).toBeUndefined();
    await admin.createTeam({ name: "infra", businessLine: "ops", mcp: { deny: ["gh_delete*"] } });
    const created = await admin.createKey({ name: "agent", team: "infra", mcp: { allow: { values: ["gh_*", "fs_read"] } } });
    expect(created.info?.mcp).toMatchObject({ allow: { values: ["gh_*", "fs_read"] }, deny: [] });
    expect(created.info?.mcp?.servers).toBeUndefined();

    // The other replica reads them from the store: listed, and carried onto the key it identifies and the levels above it.
    expect((await other.listKeys({})).keys.find((k) => k.name === "agent")?.mcp).toMatchObject({ allow: { values: ["gh_*", "fs_read"] } });
    expect((await other.listTeams({})).teams.find((t) => t.name === "infra")?.mcp).toMatchObject({ deny: ["gh_delete*"] });
    expect((await other.listBusinessLines({})).businessLines.find((l) => l.name === "ops")?.mcp).toMatchObject({ servers: { values: ["gh", "fs"] } });
    expect(await granted(b, created.key, TOOLS)).toEqual(["gh_read", "fs_read"]);

    // Replaced as a whole, named in the mask: from the next request on.
    const moved = await admin.updateKey({ name: "agent", mcp: { servers: { values: ["fs"] } }, updateMask: { paths: ["mcp"] } });
    expect(moved.key?.mcp).toMatchObject({ servers: { values: ["fs"] } });
    expect(moved.key?.mcp?.allow).toBeUndefined();
    expect(await granted(a, created.key, TOOLS)).toEqual(["fs_read", "fs_write"]);
    // The other replica's copy follows the store's key version, as for every key setting (polled; admissions catch up at once).
    await expect.poll(() => granted(b, created.key, TOOLS)).toEqual(["fs_read", "fs_write"]);

    // Without a mask a set grant is a change; a change of something else keeps it.
    await admin.updateKey({ name: "agent", mcp: { allow: { values: ["fs_w*"] } } });
    await admin.updateKey({ name: "agent", limits: { requestsPerMinute: 10 }, updateMask: { paths: ["limits"] } });
    expect((await admin.listKeys({})).keys.find((k) => k.name === "agent")?.mcp).toMatchObject({ allow: { values: ["fs_w*"] } });
    expect(await granted(a, created.key, TOOLS)).toEqual(["fs_write"]);

    // A set and empty list is "none", not "every": kept as such through the store.
    await admin.updateKey({ name: "agent", mcp: { servers: { values: [] } } });
    expect((await other.listKeys({})).keys.find((k) => k.name === "agent")?.mcp).toMatchObject({ servers: { values: [] } });
    expect(await granted(a, created.key, TOOLS)).toEqual([]);

    // Cleared (named, left unset): the key has no grant of its own, its team's and business line's still hold.
    const cleared = await admin.updateKey({ name: "agent", updateMask: { paths: ["mcp"] } });
    expect(cleared.key?.mcp).toBeUndefined();
    expect(await granted(a, created.key, TOOLS)).toEqual(["gh_read", "fs_read", "fs_write"]);
    await admin.updateTeam({ name: "infra", mcp: { servers: { values: ["gh"] } }, updateMask: { paths: ["mcp"] } });
    expect(await granted(a, created.key, TOOLS)).toEqual(["gh_read", "gh_delete_repo"]);
    await admin.updateTeam({ name: "infra", updateMask: { paths: ["mcp"] } });
    expect((await admin.listTeams({})).teams.find((t) => t.name === "infra")?.mcp).toBeUndefined();
    expect(await granted(a, created.key, TOOLS)).toEqual(TOOLS);
    // No grant left anywhere above the key: deny by default.
    await admin.updateBusinessLine({ name: "ops", updateMask: { paths: ["mcp"] } });
    expect(await granted(a, created.key, TOOLS)).toEqual([]);

    await admin.revokeKey({ name: "agent" });
    await admin.deleteTeam({ name: "infra" });
    await admin.deleteBusinessLine({ name: "ops" });
  });

  it("show a configured key's grant, and check a runtime grant as the configuration is checked", async () => {
    const admin = adminClient(replicas[0]!.url, ADMIN_KEY);
    const configured = (await admin.listKeys({})).keys.find((k) => k.name === "configured");
    expect(configured).toMatchObject({ source: KeySource.CONFIG, mcp: { servers: { values: ["gh"] }, deny: ["gh_delete*"] } });
    expect(await granted(replicas[1]!, CONFIG_KEY, TOOLS)).toEqual(["gh_read"]);

    const refused = async (call: Promise<unknown>) => {
      const failure = await rpcFailure(call);
      expect(failure.code).toBe(Code.InvalidArgument);
      return failure.rawMessage;
    };
    expect(await refused(admin.createKey({ name: "bad-glob", mcp: { allow: { values: ["gh_(read)"] } } }))).toMatch(/^mcp\.tools\.allow\.0: letters, digits/);
    expect(await refused(admin.createKey({ name: "bad-server", mcp: { servers: { values: ["github"] } } }))).toMatch(/unknown MCP server "github"/);
    expect(await refused(admin.createKey({ name: "too-many", mcp: { deny: Array.from({ length: 257 }, (_, i) => `t${i}`) } }))).toMatch(/^mcp\.tools\.deny/);
    expect(await refused(admin.createTeam({ name: "bad-team", mcp: { servers: { values: ["has_underscore"] } } }))).toMatch(/^mcp\.servers\.0/);
    expect(await refused(admin.createBusinessLine({ name: "bad-line", mcp: { allow: { values: ["x".repeat(161)] } } }))).toMatch(/^mcp\.tools\.allow\.0/);
    const names = [...(await admin.listKeys({})).keys.map((k) => k.name), ...(await admin.listTeams({})).teams.map((t) => t.name), ...(await admin.listBusinessLines({})).businessLines.map((l) => l.name)];
    for (const name of ["bad-glob", "bad-server", "too-many", "bad-team", "bad-line"]) expect(names).not.toContain(name);

    // A refused update leaves the grant as it was.
    await admin.createKey({ name: "kept", mcp: { servers: { values: ["*"] } } });
    await refused(admin.updateKey({ name: "kept", mcp: { servers: { values: ["nope"] } } }));
    expect((await admin.listKeys({})).keys.find((k) => k.name === "kept")?.mcp).toMatchObject({ servers: { values: ["*"] } });
    await admin.revokeKey({ name: "kept" });
  });
});

describe("the tenant stores", () => {
  it("keep a runtime key's and a level's grant with their other settings, in Redis and in memory", async () => {
    const redis = await storeClient();
    const storePrefix = testPrefix("mcp-grants-store");
    try {
      const stores: Record<string, TenantStore> = {
        memory: createMemoryTenantStore({ streamLeaseMs: 60_000 }),
        redis: createRedisTenantStore({ client: redis, prefix: storePrefix, streamLeaseMs: 60_000, usageStreamMaxLen: 1_000 }),
      };
      const mcp = { servers: [], tools: { allow: ["gh_*"], deny: ["gh_delete*"] } };
      for (const [name, store] of Object.entries(stores)) {
        await store.createKey({ name: "k", sha256: "a".repeat(64), createdAt: 1, limits: {}, mcp });
        await store.putLevel("team", { name: "t", id: "t-1", createdAt: 1, limits: {}, mcp }, "create");
        expect((await store.listKeys())[0]?.mcp, name).toEqual(mcp);
        expect((await store.listLevels("team"))[0]?.mcp, name).toEqual(mcp);
        await store.updateKey({ name: "k", sha256: "a".repeat(64), createdAt: 1, limits: {} });
        expect((await store.listKeys())[0]?.mcp, name).toBeUndefined();
      }
    } finally {
      await dropPrefix(storePrefix);
      redis.disconnect();
    }
  });
});
