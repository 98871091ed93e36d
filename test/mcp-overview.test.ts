import { fileURLToPath } from "node:url";
import { timestampMs } from "@bufbuild/protobuf/wkt";
import { Code } from "@connectrpc/connect";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { mcpSchema } from "../src/config/mcp-schema.js";
import type { ExposedTool, McpCaller, McpUpstreams } from "../src/mcp/contract.js";
import { mcpOverview } from "../src/mcp/mcp-overview.js";
import { createRecentToolCalls, withRecentCalls } from "../src/mcp/recent-calls.js";
import type { Principal } from "../src/tenancy/principal.js";
import { adminClient } from "./helpers/admin.js";
import { rpcFailure } from "./helpers/clients.js";
import { type Harness, startHarness } from "./helpers/harness.js";
import { type McpTestServer, startMcpTestServer } from "./helpers/mcp-test-server.js";
import { type OwnDatabase, ownDatabase } from "./helpers/postgres.js";
import { tenancyEvents } from "./helpers/tenancy-events.js";

const ADMIN_KEY = "sk-test-admin-5d7f9b1c3e2a4680";
const ALICE_KEY = "sk-test-alice-8a6c4e2f0b9d1357";
const BOB_KEY = "sk-test-bob-1f3e5d7c9b2a4680bb";

const tool = (server: string, name: string): ExposedTool => ({ name: `${server}_${name}`, server, upstreamName: name, definition: { name: `${server}_${name}`, inputSchema: { type: "object" } } });

const STDIO_FIXTURE = fileURLToPath(new URL("./fixtures/mcp-stdio-server.mjs", import.meta.url));

describe("AdminService.GetMcpOverview, the console's MCP page", () => {
  let h: Harness;
  let upstream: McpTestServer;
  beforeAll(async () => {
    upstream = await startMcpTestServer();
    h = await startHarness({
      env: { SLUICE_ADMIN_KEY: ADMIN_KEY, ALICE_KEY, BOB_KEY, MCP_CREDENTIALS_KEY: "mcp-overview-secret-0123456789abcdef" },
      auth: {
        adminKeyEnv: "SLUICE_ADMIN_KEY",
        businessLines: [{ name: "retail", mcp: { servers: ["tickets", "files"] } }],
        teams: [{ name: "support", businessLine: "retail", mcp: { servers: ["tickets"], tools: { deny: ["tickets_delete*"] } } }],
        keys: [
          { name: "alice", keyEnv: "ALICE_KEY", team: "support", mcp: { tools: { allow: ["tickets_*"] } } },
          { name: "bob", keyEnv: "BOB_KEY" },
        ],
      },
      mcp: {
        credentialsKeyEnv: "MCP_CREDENTIALS_KEY",
        servers: {
          tickets: { http: { url: upstream.url }, auth: { mode: "per-key" } },
          files: { stdio: { command: process.execPath, args: [STDIO_FIXTURE] } },
        },
      },
    });
  });
  afterAll(async () => {
    await h?.close();
    await upstream?.close();
  });

  it("needs the admin key", async () => {
    expect((await rpcFailure(adminClient(h.url).getMcpOverview({}))).code).toBe(Code.Unauthenticated);
    expect((await rpcFailure(adminClient(h.url, ALICE_KEY).getMcpOverview({}))).code).toBe(Code.Unauthenticated);
  });

  it("lists the configured servers, every level holding a grant, and the calls settled, newest first", async () => {
    const admin = adminClient(h.url, ADMIN_KEY);
    const ids = Object.fromEntries((await admin.listKeys({})).keys.map((k) => [k.name, k.id]));
    // Calls settled through accounting wrapped as the toolbox's is.
    const accounting = withRecentCalls({ admit: async () => ({ settle: () => undefined }) }, h.sluice.mcpRecentCalls, () => Date.parse("2026-12-07T00:00:00Z"));
    const alice: McpCaller = { principal: { id: ids.alice, name: "alice" } as unknown as Principal };
    const signal = new AbortController().signal;
    const facts = { server: "tickets", upstreamTool: "open", argumentsSha256: "0".repeat(64), priceUsd: 0.002, via: "mcp" as const };
    (await accounting.admit(alice, { ...facts, tool: "tickets_open" }, signal)).settle({ outcome: "ok", durationMs: 12, resultBytes: 340 });
    (await accounting.admit({}, { ...facts, tool: "tickets_close" }, signal)).settle({ outcome: "timeout", durationMs: 60_000, resultBytes: 0 });

    const overview = await admin.getMcpOverview({});
    // Listed, so connected: both up, with their tools under exposed names.
    expect(overview.servers.map((s) => [s.name, s.transport, s.authMode, s.state])).toEqual([
      ["files", "stdio", "static", "up"],
      ["tickets", "http", "per-key", "up"],
    ]);
    expect(overview.servers[0]!.tools).toContain("files_echo");
    expect(overview.servers[1]!.tools).toContain("tickets_whoami");
    expect(overview.grants.map((g) => [g.level, g.name, g.source, g.servers, g.allow, g.deny])).toEqual([
      ["business_line", "retail", "config", ["tickets", "files"], [], []],
      ["team", "support", "config", ["tickets"], [], ["tickets_delete*"]],
      ["key", "alice", "config", [], ["tickets_*"], []],
    ]);
    expect(overview.grants.find((g) => g.name === "alice")?.id).toBe(ids.alice);
    expect(overview.recentCalls.map((c) => [c.tool, c.outcome, c.keyName, c.keyId, c.durationMs, c.resultBytes, c.priceUsdMicros])).toEqual([
      ["tickets_close", "timeout", "", "", 60_000n, 0n, 2_000n],
      ["tickets_open", "ok", "alice", ids.alice, 12n, 340n, 2_000n],
    ]);
    expect(timestampMs(overview.recentCalls[0]!.time!)).toBe(Date.parse("2026-12-07T00:00:00Z"));
    expect((await admin.getMcpOverview({ recentCalls: 1 })).recentCalls.map((c) => c.tool)).toEqual(["tickets_close"]);
  });
});

describe("the MCP overview with the upstream side running", () => {
  it("shows each server's health and exposed tools, and a server whose listing hangs without tools rather than holding the page", async () => {
    const settings = mcpSchema.parse({ servers: { tickets: { http: { url: "http://127.0.0.1:9/mcp" } }, stuck: { http: { url: "http://127.0.0.1:9/stuck" } } } });
    const upstreams = {
      servers: ["tickets", "stuck"],
      tools: (server: string, signal: AbortSignal) =>
        server === "tickets" ? Promise.resolve([tool("tickets", "open"), tool("tickets", "close")]) : new Promise<ExposedTool[]>((_, reject) => signal.addEventListener("abort", () => reject(signal.reason), { once: true })),
      health: () => ({ tickets: { state: "up", transport: "http", tools: 2 }, stuck: { state: "breaker_open", transport: "http", tools: 0, lastError: "connect ECONNREFUSED" } }),
    } as unknown as McpUpstreams;
    const overview = await mcpOverview({ settings: () => settings, upstreams: () => upstreams, keys: async () => [], levels: async () => [], recent: createRecentToolCalls(), listTimeoutMs: 50 }, 10);
    expect(overview.servers.map((s) => [s.name, s.health?.state, s.health?.lastError, s.tools])).toEqual([
      ["stuck", "breaker_open", "connect ECONNREFUSED", []],
      ["tickets", "up", undefined, ["tickets_open", "tickets_close"]],
    ]);
  });

  it("keeps the last calls in a bounded ring, newest first", () => {
    const ring = createRecentToolCalls(3);
    for (let i = 0; i < 7; i++) ring.add({ at: i, server: "s", tool: `s_t${i}`, outcome: "ok", durationMs: 1, resultBytes: 1, via: "mcp", priceUsd: 0 });
    expect(ring.latest(10).map((c) => c.tool)).toEqual(["s_t6", "s_t5", "s_t4"]);
    expect(ring.latest(2).map((c) => c.tool)).toEqual(["s_t6", "s_t5"]);
  });
});

describe("the MCP page's recent calls with the ledger on", () => {
  const ADMIN = "sk-test-admin-9d7b5f3a1c2e4680";
  const AGENT = "sk-test-agent-3c5e7a9b1d2f4680";
  const events = tenancyEvents();
  let h: Harness;
  let upstream: McpTestServer;
  let database: OwnDatabase;
  beforeAll(async () => {
    upstream = await startMcpTestServer();
    database = await ownDatabase();
    h = await startHarness({
      env: { SLUICE_ADMIN_KEY: ADMIN, AGENT },
      auth: { adminKeyEnv: "SLUICE_ADMIN_KEY", keys: [{ name: "agent", keyEnv: "AGENT", mcp: { servers: ["test"] } }] },
      store: { postgres: { url: database.url, poolSize: 2 } },
      ledger: { enabled: true },
      observer: events.observer,
      mcp: { servers: { test: { http: { url: upstream.url }, price: { perCall: 0.003 } } } },
    });
  }, 120_000);
  afterAll(async () => {
    await h?.close();
    await upstream?.close();
    await database?.drop();
  });

  it("reads them from the ledger's tool rows (every replica's), not only this replica's ring", async () => {
    const client = new Client({ name: "overview", version: "1.0.0" });
    await client.connect(new StreamableHTTPClientTransport(new URL(`${h.url}/mcp`), { requestInit: { headers: { authorization: `Bearer ${AGENT}` } } }));
    try {
      await client.callTool({ name: "test_add", arguments: { a: 1, b: 2 } });
    } finally {
      await client.close();
    }
    // The tool call's record stored (its request id is the call's own, not the HTTP request's).
    await events.until(() => events.usage.some((e) => e.record.alias === "test_add" && (e.result === "stored" || e.result === "flushed")));
    await h.sluice.ledger!.flush();
    // A row only the ledger has: the ring of this replica never saw it.
    await database.query(
      "INSERT INTO sluice_ledger (id, at, request_id, key_name, key_id, alias, target, input_tokens, cached_input_tokens, output_tokens, reasoning_tokens, cost_micros, estimated, saved_micros, duration_ms, outcome, error_code, kind, tool_server, tool_name, result_bytes) VALUES ('other-replica-1', now() - interval '1 minute', 'other', 'agent', 'feedfacecafe', 'test_echo', 'test', 0, 0, 0, 0, 3000, false, 0, 7, 'failed', 'timeout', 'tool', 'test', 'echo', 12)",
    );
    const calls = (await adminClient(h.url, ADMIN).getMcpOverview({})).recentCalls;
    expect(calls.map((c) => [c.tool, c.server, c.keyName, c.outcome, c.priceUsdMicros, c.via])).toEqual([
      ["test_add", "test", "agent", "ok", 3_000n, ""],
      ["test_echo", "test", "agent", "timeout", 3_000n, ""],
    ]);
    expect(h.sluice.mcpRecentCalls.latest(10).map((c) => c.tool)).toEqual(["test_add"]);
  });
});
