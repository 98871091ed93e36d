import { writeFile } from "node:fs/promises";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { stringify } from "yaml";
import type { ConfigInput } from "../src/config/schema.js";
import { type GatewayProcess, startGatewayProcess } from "./helpers/gateway-process.js";
import { type McpTestServer, startMcpTestServer } from "./helpers/mcp-test-server.js";

/**
 * One MCP session across two gateway processes (the built gateway, `npm
 * run build`): the session id is sealed with the secret both hold, so the
 * client's calls alternate between them with no sticky routing, and the
 * upstream's per-session `count` proves they continue one upstream session.
 * A grant changed by a reload applies to the session's next call.
 */
const KEY = "sk-test-mcp-replicas-5e6f7a8b9c0d1e2f";

let upstream: McpTestServer;
let a: GatewayProcess;
let b: GatewayProcess;

const configWith = (grant: { servers: string[]; tools?: { deny: string[] } }): ConfigInput =>
  ({
    log: { level: "info" },
    // A model route the gateway needs to start; no call here uses it.
    providers: { unused: { kind: "openai", baseUrl: "http://127.0.0.1:9/v1" } },
    models: { unused: { provider: "unused", model: "none" } },
    auth: { keys: [{ name: "replicated", keyEnv: "MCP_REPLICA_KEY", mcp: grant }] },
    mcp: { servers: { test: { http: { url: upstream.url } } } },
  }) as unknown as ConfigInput;

beforeAll(async () => {
  upstream = await startMcpTestServer();
  const env = { ...process.env, MCP_REPLICA_KEY: KEY, SLUICE_MCP_SESSION_SECRET: "replica-test-secret-0123456789abcdef0123" };
  [a, b] = await Promise.all([startGatewayProcess(configWith({ servers: ["test"] }), { env }), startGatewayProcess(configWith({ servers: ["test"] }), { env })]);
}, 120_000);
afterAll(async () => {
  await Promise.all([a?.stop(), b?.stop()]);
  await upstream?.close();
});

describe("an MCP session across two gateway replicas", () => {
  it("alternates calls between the replicas on one upstream session, and a grant change applies to the next call", async () => {
    const served: string[] = [];
    let turn = 0;
    // Every request of the session goes to the other replica than the last: no stickiness at all.
    const alternating = async (url: string | URL, init?: RequestInit) => {
      const target = [a.url, b.url][turn++ % 2]!;
      served.push(target);
      return fetch(String(url).replace(a.url, target), init);
    };
    const transport = new StreamableHTTPClientTransport(new URL(`${a.url}/mcp`), { fetch: alternating, requestInit: { headers: { authorization: `Bearer ${KEY}` } } });
    const client = new Client({ name: "replica-test", version: "1.0.0" });
    await client.connect(transport);
    try {
      const counts: string[] = [];
      for (let i = 0; i < 4; i++) {
        const result = await client.callTool({ name: "test_count", arguments: {} });
        counts.push((result.content as Array<{ text: string }>)[0]!.text);
      }
      expect(counts).toEqual(["1", "2", "3", "4"]);
      expect(new Set(served)).toEqual(new Set([a.url, b.url]));
      // One upstream session served every call, whichever replica forwarded it.
      const callSessions = new Set(upstream.calls("count").map((s) => s.sessionId));
      expect(callSessions.size).toBe(1);

      // Deny test_count to the key on both replicas; the same session's next call is refused, on either.
      for (const gw of [a, b]) {
        const reloaded = gw.waitForLine((l) => l.event === "config.reloaded");
        await writeFile(gw.configFile, stringify(configWith({ servers: ["test"], tools: { deny: ["test_count"] } })));
        gw.child.kill("SIGHUP");
        await reloaded;
      }
      const forwarded = upstream.calls("count").length;
      await expect(client.callTool({ name: "test_count", arguments: {} })).rejects.toThrow(/unknown tool/);
      await expect(client.callTool({ name: "test_count", arguments: {} })).rejects.toThrow(/unknown tool/);
      expect(upstream.calls("count").length).toBe(forwarded);
      expect((await client.listTools()).tools.map((t) => t.name)).not.toContain("test_count");
    } finally {
      await client.close();
    }
  });
});
