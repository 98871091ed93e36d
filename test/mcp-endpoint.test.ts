import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport, StreamableHTTPError } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import type { Progress } from "@modelcontextprotocol/sdk/types.js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type Harness, startHarness } from "./helpers/harness.js";
import { type McpTestServer, startMcpTestServer } from "./helpers/mcp-test-server.js";

/**
 * `/mcp` of a running gateway with the official SDK client, in front of a
 * real SDK-built MCP server: sessions, listings under grants, calls with
 * their checks (constraints, PII), progress and cancellation.
 */
const FULL = "sk-test-mcp-full-1a2b3c4d5e6f7081";
const NONE = "sk-test-mcp-none-9f8e7d6c5b4a3021";
const REDACT = "sk-test-mcp-redact-0a1b2c3d4e5f6071";
const BLOCK = "sk-test-mcp-block-7a6b5c4d3e2f1009";
const EMAIL = "grace.hopper@example.com";

let upstream: McpTestServer;
let h: Harness;
const clients: Client[] = [];

beforeAll(async () => {
  upstream = await startMcpTestServer();
  h = await startHarness({
    env: { FULL, NONE, REDACT, BLOCK },
    auth: {
      keys: [
        { name: "full", keyEnv: "FULL", mcp: { servers: ["test"], tools: { deny: ["test_whoami"] } } },
        { name: "none", keyEnv: "NONE" },
        { name: "redact", keyEnv: "REDACT", mcp: { servers: ["test"] }, pii: { mode: "redact" } },
        { name: "block", keyEnv: "BLOCK", mcp: { servers: ["test"] }, pii: { mode: "block" } },
      ],
    },
    limits: { maxRequestBytes: 65_536 },
    mcp: { servers: { test: { http: { url: upstream.url }, tools: { echo: { arguments: { type: "object", properties: { text: { type: "string", maxLength: 30 } } } } } } } },
  });
});
afterAll(async () => {
  for (const c of clients) await c.close().catch(() => {});
  await h?.close();
  await upstream?.close();
});

async function connect(key: string, headers: Record<string, string> = {}): Promise<{ client: Client; transport: StreamableHTTPClientTransport }> {
  const client = new Client({ name: "wire-test", version: "1.0.0" });
  const transport = new StreamableHTTPClientTransport(new URL(`${h.url}/mcp`), { requestInit: { headers: { authorization: `Bearer ${key}`, ...headers } } });
  await client.connect(transport);
  clients.push(client);
  return { client, transport };
}

const textOf = (result: Record<string, unknown>) => (result.content as Array<{ type: string; text: string }>)[0]!.text;

describe("the /mcp endpoint", () => {
  it("initializes with a sealed session id and lists the granted tools under their exposed names", async () => {
    const { client, transport } = await connect(FULL);
    expect(transport.sessionId).toMatch(/^[A-Za-z0-9_-]{40,}$/);
    expect(client.getServerVersion()?.name).toBe("sluice");
    const names = (await client.listTools()).tools.map((t) => t.name).sort();
    expect(names).toEqual(["test_add", "test_big", "test_count", "test_drip", "test_echo", "test_fail", "test_hang", "test_slow"]);
    expect(textOf(await client.callTool({ name: "test_add", arguments: { a: 2, b: 3 } }))).toBe("5");
    // The caller's key never reaches the server.
    expect(upstream.seen.every((s) => !JSON.stringify(s.headers).includes(FULL))).toBe(true);
  });

  it("narrows a key's tools by the request's header, and refuses a malformed one", async () => {
    const { client } = await connect(FULL, { "sluice-mcp-tools": "test_add,test_echo" });
    expect((await client.listTools()).tools.map((t) => t.name).sort()).toEqual(["test_add", "test_echo"]);
    await expect(client.callTool({ name: "test_count", arguments: {} })).rejects.toThrow(/unknown tool/);
    const malformed = await fetch(`${h.url}/mcp`, {
      method: "POST",
      headers: { "content-type": "application/json", accept: "application/json, text/event-stream", authorization: `Bearer ${FULL}`, "sluice-mcp-tools": "x".repeat(200) },
      body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "initialize", params: { protocolVersion: "2025-11-25", capabilities: {}, clientInfo: { name: "raw", version: "1" } } }),
    });
    expect(malformed.status).toBe(400);
    expect(await malformed.json()).toMatchObject({ error: { code: -32602 }, id: null });
  });

  it("passes prompts and resources through", async () => {
    const { client } = await connect(FULL);
    expect((await client.listPrompts()).prompts.map((p) => p.name)).toEqual(["test_greet"]);
    const prompt = await client.getPrompt({ name: "test_greet", arguments: { who: "Ada" } });
    expect(prompt.messages[0]!.content).toEqual({ type: "text", text: "Hello, Ada" });
    expect((await client.listResources()).resources.map((r) => r.uri)).toEqual(["test://readme"]);
    expect((await client.readResource({ uri: "test://readme" })).contents[0]).toMatchObject({ text: "read me" });
  });

  it("streams upstream progress to a caller that asked for it", async () => {
    const { client } = await connect(FULL);
    const seen: Progress[] = [];
    const result = await client.callTool({ name: "test_slow", arguments: { steps: 3 } }, undefined, { onprogress: (p) => void seen.push(p) });
    expect(textOf(result)).toBe("done 3");
    expect(seen.map((p) => p.progress)).toEqual([1, 2, 3]);
  });

  it("ends a call the client cancels, and the upstream is told (test_hang never answers on its own)", async () => {
    const { client } = await connect(FULL);
    const abort = new AbortController();
    const before = upstream.calls("hang").length;
    const mcpLines = () => h.logs().filter((l) => l.event === "access" && l.route === "/mcp" && l.method === "POST");
    const call = client.callTool({ name: "test_hang", arguments: {} }, undefined, { signal: abort.signal });
    await expect.poll(() => upstream.calls("hang").length).toBe(before + 1);
    // The call's own POST is open until it ends: its line comes after these.
    const linesBefore = mcpLines().length;
    abort.abort();
    await expect(call).rejects.toThrow();
    // Two POSTs end: the client's notifications/cancelled (202), and the call itself, which only the cancellation ends.
    await expect
      .poll(() =>
        mcpLines()
          .slice(linesBefore)
          .map((l) => l.status)
          .sort(),
      )
      .toEqual([200, 202]);
  });

  it("refuses arguments outside the tool's constraint, naming the path, with nothing forwarded", async () => {
    const { client } = await connect(FULL);
    const before = upstream.calls("echo").length;
    await expect(client.callTool({ name: "test_echo", arguments: { text: "x".repeat(31) } })).rejects.toThrow(/arguments\/text/);
    expect(upstream.calls("echo").length).toBe(before);
  });

  it("redacts personal data before it leaves and restores it for the caller", async () => {
    const { client } = await connect(REDACT);
    const result = await client.callTool({ name: "test_echo", arguments: { text: EMAIL } });
    expect(textOf(result)).toBe(EMAIL);
    // The server saw a placeholder, never the value.
    expect(upstream.calls("echo").at(-1)!.arguments).toEqual({ text: "<EMAIL_1>" });
    expect(JSON.stringify(upstream.seen)).not.toContain(EMAIL);
  });

  it("blocks a call holding personal data under `block`, with nothing forwarded", async () => {
    const { client } = await connect(BLOCK);
    const before = upstream.calls("echo").length;
    await expect(client.callTool({ name: "test_echo", arguments: { text: EMAIL } })).rejects.toThrow(/email/);
    expect(upstream.calls("echo").length).toBe(before);
  });

  it("shows a key without a grant no tools and refuses its call before anything is forwarded", async () => {
    const { client } = await connect(NONE);
    expect((await client.listTools()).tools).toEqual([]);
    const before = upstream.seen.length;
    await expect(client.callTool({ name: "test_add", arguments: { a: 1, b: 1 } })).rejects.toThrow(/unknown tool/);
    const { client: full } = await connect(FULL);
    await expect(full.callTool({ name: "test_whoami", arguments: {} })).rejects.toThrow(/unknown tool/);
    expect(upstream.seen.slice(before).filter((s) => s.method === "tools/call")).toEqual([]);
  });

  it("answers 404 to a session id presented with another key, and 401 without a key", async () => {
    const { transport } = await connect(FULL);
    const other = new StreamableHTTPClientTransport(new URL(`${h.url}/mcp`), { sessionId: transport.sessionId!, requestInit: { headers: { authorization: `Bearer ${REDACT}` } } });
    const stolen = new Client({ name: "thief", version: "1.0.0" });
    // Reusing a session: connect() skips initialize when the transport already has a session id.
    await stolen.connect(other).catch(() => {});
    const error = await stolen.listTools().then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(StreamableHTTPError);
    expect((error as StreamableHTTPError).code).toBe(404);
    await stolen.close().catch(() => {});
    const anonymous = await fetch(`${h.url}/mcp`, { method: "POST", headers: { "content-type": "application/json", accept: "application/json, text/event-stream" }, body: "{}" });
    expect(anonymous.status).toBe(401);
    expect(await anonymous.json()).toMatchObject({ jsonrpc: "2.0", error: { code: -32000 }, id: null });
  });

  describe("requests the endpoint cannot hand to the MCP server", () => {
    const post = (body: string, headers: Record<string, string> = {}) =>
      fetch(`${h.url}/mcp`, { method: "POST", headers: { "content-type": "application/json", accept: "application/json, text/event-stream", authorization: `Bearer ${FULL}`, ...headers }, body });
    const listTools = JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tools/list" });
    const initialize = JSON.stringify({ jsonrpc: "2.0", id: 1, method: "initialize", params: { protocolVersion: "2025-06-18", capabilities: {}, clientInfo: { name: "raw", version: "1" } } });

    it("answers 400 without a session id, 404 for an altered one, 413 past limits.maxRequestBytes and 400 for JSON that does not parse", async () => {
      const missing = await post(listTools);
      expect(missing.status).toBe(400);
      expect(await missing.json()).toMatchObject({ jsonrpc: "2.0", error: { code: -32000 }, id: null });
      const { transport } = await connect(FULL);
      const id = transport.sessionId!;
      const altered = await post(listTools, { "mcp-session-id": `${id.slice(0, -2)}${id.endsWith("AA") ? "BB" : "AA"}` });
      expect(altered.status).toBe(404);
      expect(await altered.json()).toMatchObject({ error: { code: -32001 } });
      const big = await post(JSON.stringify({ jsonrpc: "2.0", id: 2, method: "tools/call", params: { name: "test_echo", arguments: { text: "x".repeat(70_000) } } }), { "mcp-session-id": id });
      expect(big.status).toBe(413);
      const broken = await post("{", { "mcp-session-id": id });
      expect(broken.status).toBe(400);
      expect(await broken.json()).toMatchObject({ error: { code: -32700 } });
    });

    it("negotiates an earlier protocol version, answers GET with 405 and DELETE of its own session with 200", async () => {
      const answer = await post(initialize);
      expect(answer.status).toBe(200);
      const id = answer.headers.get("mcp-session-id")!;
      expect(id).toBeTruthy();
      expect(await answer.text()).toContain('"protocolVersion":"2025-06-18"');
      const get = await fetch(`${h.url}/mcp`, { headers: { authorization: `Bearer ${FULL}`, accept: "text/event-stream", "mcp-session-id": id } });
      expect(get.status).toBe(405);
      expect(get.headers.get("allow")).toBe("POST, DELETE");
      const otherKey = await fetch(`${h.url}/mcp`, { method: "DELETE", headers: { authorization: `Bearer ${REDACT}`, "mcp-session-id": id } });
      expect(otherKey.status).toBe(404);
      const deleted = await fetch(`${h.url}/mcp`, { method: "DELETE", headers: { "x-api-key": FULL, "mcp-session-id": id } });
      expect(deleted.status).toBe(200);
    });

    it("refuses new sessions while draining, and serves the open ones", async () => {
      const { client } = await connect(FULL);
      const health = h.sluice.server.health;
      health.setReady(false);
      try {
        const refused = await post(initialize);
        expect(refused.status).toBe(503);
        expect(refused.headers.get("retry-after")).toBe("1");
        expect(textOf(await client.callTool({ name: "test_add", arguments: { a: 1, b: 2 } }))).toBe("3");
      } finally {
        health.setReady(true);
      }
    });
  });
});
