import { timestampFromMs } from "@bufbuild/protobuf/wkt";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { adminClient } from "./helpers/admin.js";
import { type Harness, startHarness } from "./helpers/harness.js";
import { type McpTestServer, startMcpTestServer } from "./helpers/mcp-test-server.js";

/**
 * Per-key upstream identity end to end: the official SDK client at
 * `/mcp`, tokens set over the admin RPC, and a real SDK-built server whose
 * `whoami` answers the Authorization it received.
 */
const ADMIN_KEY = "sk-test-admin-2e4c6a8f0d1b3957";
const ALICE_KEY = "sk-test-alice-6f4d2b0a8e9c1357";
const BOB_KEY = "sk-test-bob-0c2e4a6f8d1b3579cc";
const CAROL_KEY = "sk-test-carol-4a2c6e8f0b9d1357";
const TOKEN_A = "upstream-token-of-alice-111";
const TOKEN_B = "upstream-token-of-bob-222";

let upstream: McpTestServer;
let h: Harness;
const clients: Client[] = [];

beforeAll(async () => {
  upstream = await startMcpTestServer();
  const grant = { servers: ["tickets"] };
  h = await startHarness({
    env: { SLUICE_ADMIN_KEY: ADMIN_KEY, ALICE_KEY, BOB_KEY, CAROL_KEY, MCP_CREDENTIALS_KEY: "per-key-wire-credentials-secret-0123456789" },
    auth: {
      adminKeyEnv: "SLUICE_ADMIN_KEY",
      keys: [
        { name: "alice", keyEnv: "ALICE_KEY", mcp: grant },
        { name: "bob", keyEnv: "BOB_KEY", mcp: grant },
        { name: "carol", keyEnv: "CAROL_KEY", mcp: grant },
      ],
    },
    mcp: { credentialsKeyEnv: "MCP_CREDENTIALS_KEY", servers: { tickets: { http: { url: upstream.url }, auth: { mode: "per-key" } } } },
  });
});
afterAll(async () => {
  for (const c of clients) await c.close().catch(() => {});
  await h?.close();
  await upstream?.close();
});

async function connect(key: string): Promise<Client> {
  const client = new Client({ name: "per-key-wire", version: "1.0.0" });
  await client.connect(new StreamableHTTPClientTransport(new URL(`${h.url}/mcp`), { requestInit: { headers: { authorization: `Bearer ${key}` } } }));
  clients.push(client);
  return client;
}

const whoami = async (client: Client) => ((await client.callTool({ name: "tickets_whoami", arguments: {} })).content as Array<{ text: string }>)[0]!.text;

describe("per-key upstream identity at /mcp", () => {
  it("calls the server with each key's own token, never another key's and never the caller's key; a key without one is refused", async () => {
    const admin = adminClient(h.url, ADMIN_KEY);
    const ids = Object.fromEntries((await admin.listKeys({})).keys.map((k) => [k.name, k.id]));
    const later = timestampFromMs(Date.now() + 3_600_000);
    await admin.setMcpCredential({ keyId: ids.alice!, server: "tickets", accessToken: TOKEN_A, expiresAt: later });
    await admin.setMcpCredential({ keyId: ids.bob!, server: "tickets", accessToken: TOKEN_B, expiresAt: later });

    const [alice, bob, carol] = await Promise.all([connect(ALICE_KEY), connect(BOB_KEY), connect(CAROL_KEY)]);
    // Interleaved and concurrent: no call carries what another set up.
    const answers = await Promise.all([whoami(alice), whoami(bob), whoami(alice), whoami(bob)]);
    expect(answers).toEqual([`Bearer ${TOKEN_A}`, `Bearer ${TOKEN_B}`, `Bearer ${TOKEN_A}`, `Bearer ${TOKEN_B}`]);

    const refused = await carol.callTool({ name: "tickets_whoami", arguments: {} }).catch((error: unknown) => error);
    expect(String((refused as Error).message ?? refused)).toContain("SetMcpCredential");
    expect(upstream.calls("whoami")).toHaveLength(4);

    // Removed: Bob's next call is refused, Alice's still carries hers.
    await admin.deleteMcpCredential({ keyId: ids.bob!, server: "tickets" });
    expect(String(((await bob.callTool({ name: "tickets_whoami", arguments: {} }).catch((error: unknown) => error)) as Error).message)).toContain("SetMcpCredential");
    expect(await whoami(alice)).toBe(`Bearer ${TOKEN_A}`);

    const everything = JSON.stringify(upstream.seen.map((s) => s.headers));
    for (const key of [ALICE_KEY, BOB_KEY, CAROL_KEY]) expect(everything).not.toContain(key);
    expect(h.logText()).not.toContain(TOKEN_A);
  });
});
