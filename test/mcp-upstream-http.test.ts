import { type AddressInfo, createServer, type Server, type Socket } from "node:net";
import { afterEach, describe, expect, it, vi } from "vitest";
import { mcpSchema } from "../src/config/mcp-schema.js";
import { MCP_ERRORS, McpError } from "../src/mcp/contract.js";
import { deeperThan, exposedName, schemaProblem } from "../src/mcp/upstream/listing-bounds.js";
import { createMcpUpstreams } from "../src/mcp/upstream/upstreams.js";
import { capturedLogger } from "./helpers/captured-logger.js";
import { type McpTestServerOptions, startMcpTestServer } from "./helpers/mcp-test-server.js";

const closers: Array<() => Promise<void>> = [];
afterEach(async () => {
  while (closers.length > 0) await closers.pop()?.();
});

const signal = () => new AbortController().signal;

async function setUp(options: { server?: McpTestServerOptions; mcp?: Record<string, unknown>; http?: Record<string, unknown>; env?: NodeJS.ProcessEnv; now?: () => number } = {}) {
  const server = await startMcpTestServer(options.server);
  closers.push(() => server.close());
  const { logger, lines } = capturedLogger();
  const settings = mcpSchema.parse({ servers: { test: { http: { url: server.url, ...options.http }, timeoutMs: 5_000 } }, ...options.mcp });
  const upstreams = createMcpUpstreams(settings, { log: logger, env: options.env ?? {}, ...(options.now ? { now: options.now } : {}) });
  closers.push(() => upstreams.close());
  return { server, upstreams, lines };
}

const text = (result: { content: unknown[] }) => (result.content[0] as { text: string }).text;

async function rejection(promise: Promise<unknown>): Promise<McpError> {
  const error = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(McpError);
  return error as McpError;
}

describe("MCP upstreams over streamable HTTP", () => {
  it("lists tools under exposed names and calls them, prompts and resources too", async () => {
    const { upstreams } = await setUp();
    expect(upstreams.servers).toEqual(["test"]);
    const tools = await upstreams.tools("test", signal());
    const echo = tools.find((t) => t.upstreamName === "echo");
    expect(echo).toMatchObject({ name: "test_echo", server: "test", definition: { name: "test_echo" } });
    expect(tools.map((t) => t.name)).toContain("test_hang");
    expect(text(await upstreams.callTool("test", "add", { a: 2, b: 3 }, { signal: signal() }))).toBe("5");
    const failed = await upstreams.callTool("test", "fail", { message: "nope" }, { signal: signal() });
    expect(failed.isError).toBe(true);
    expect((await upstreams.prompts("test", signal())).map((p) => p.name)).toEqual(["test_greet"]);
    const prompt = await upstreams.getPrompt("test", "greet", { who: "Ada" }, { signal: signal() });
    expect(prompt.messages[0]?.content).toEqual({ type: "text", text: "Hello, Ada" });
    const resources = await upstreams.resources("test", signal());
    expect(resources.map((r) => r.definition.uri)).toEqual(["test://readme"]);
    const read = await upstreams.readResource("test", "test://readme", { signal: signal() });
    expect(read.contents[0]).toMatchObject({ text: "read me" });
    expect(upstreams.health().test).toMatchObject({ state: "up", transport: "http" });
    expect(upstreams.health().test?.tools).toBe(tools.length);
  });

  it("shares one listing request among concurrent callers and reuses it until list_changed", async () => {
    const { server, upstreams } = await setUp();
    const [a, b, c] = await Promise.all([upstreams.tools("test", signal()), upstreams.tools("test", signal()), upstreams.tools("test", signal())]);
    expect(b).toBe(a);
    expect(c).toBe(a);
    await upstreams.tools("test", signal());
    expect(server.seen.filter((s) => s.method === "tools/list")).toHaveLength(1);

    const changed = new Promise<string>((resolve) => upstreams.onListChanged(resolve));
    server.addTool("later");
    expect(await changed).toBe("test");
    const after = await upstreams.tools("test", signal());
    expect(after.map((t) => t.name)).toContain("test_later");
    expect(server.seen.filter((s) => s.method === "tools/list")).toHaveLength(2);
  });

  it("continues a sealed upstream session by its id, and each session keeps its own state", async () => {
    const { server, upstreams } = await setUp();
    const sessions = await upstreams.openSessions(["test", "unknown"], signal());
    expect(Object.keys(sessions)).toEqual(["test"]);
    const id = sessions.test as string;
    const count = (sessionId?: string) => upstreams.callTool("test", "count", {}, { signal: signal(), ...(sessionId ? { sessionId } : {}) }).then(text);
    expect(await count(id)).toBe("1");
    expect(await count(id)).toBe("2");
    expect(await count()).toBe("1");
    expect(await count(id)).toBe("3");
    expect(server.calls("count").map((s) => s.sessionId === id)).toEqual([true, true, false, true]);
    // Continuing skipped initialize: only openSessions and the long-lived client initialized.
    expect(server.seen.filter((s) => s.method === "initialize")).toHaveLength(2);
  });

  it("serves a call whose sealed session expired upstream on a fresh session, and says so", async () => {
    const { server, upstreams, lines } = await setUp();
    const result = await upstreams.callTool("test", "count", {}, { signal: signal(), sessionId: "expired-session" });
    expect(text(result)).toBe("1");
    expect(server.calls("count")[1]?.sessionId).not.toBe("expired-session");
    expect(lines.some((l) => l.event === "mcp.session_expired")).toBe(true);
  });

  it("sends the server's headers from the environment, and a caller's bearer instead of them for its call", async () => {
    const { upstreams, lines } = await setUp({ http: { headersFromEnv: { Authorization: "MCP_TEST_TOKEN" }, headers: { "x-team": "blue" } }, env: { MCP_TEST_TOKEN: "Bearer gateway-secret" } });
    expect(text(await upstreams.callTool("test", "whoami", {}, { signal: signal() }))).toBe("Bearer gateway-secret");
    expect(text(await upstreams.callTool("test", "whoami", {}, { signal: signal(), bearer: "user-token" }))).toBe("Bearer user-token");
    expect(text(await upstreams.callTool("test", "whoami", {}, { signal: signal() }))).toBe("Bearer gateway-secret");
    expect(JSON.stringify(lines)).not.toContain("gateway-secret");
    expect(JSON.stringify(lines)).not.toContain("user-token");
  });

  it("passes progress to the caller", async () => {
    const { upstreams } = await setUp();
    const progress: number[] = [];
    const result = await upstreams.callTool("test", "slow", { steps: 4 }, { signal: signal(), onProgress: (p) => progress.push(p.progress) });
    expect(text(result)).toBe("done 4");
    expect(progress).toEqual([1, 2, 3, 4]);
  });

  it("cancels the upstream request when the caller's signal aborts", async () => {
    const { server, upstreams } = await setUp();
    const caller = new AbortController();
    const call = upstreams.callTool("test", "hang", {}, { signal: caller.signal });
    await vi.waitFor(() => expect(server.calls("hang")).toHaveLength(1));
    caller.abort();
    const error = await rejection(call);
    expect(error.data).toMatchObject({ canceled: true });
    await vi.waitFor(() => expect(server.seen.some((s) => s.method === "notifications/cancelled")).toBe(true));
    // A cancelled call is not the server's failure.
    expect(upstreams.health().test?.state).toBe("up");
  });

  it("fails a call the server never answers at its timeout", async () => {
    const server = await startMcpTestServer();
    closers.push(() => server.close());
    const { logger } = capturedLogger();
    const short = createMcpUpstreams(mcpSchema.parse({ servers: { slow: { http: { url: server.url }, timeoutMs: 200, maxTotalTimeoutMs: 300 } } }), { log: logger, env: {} });
    closers.push(() => short.close());
    const started = Date.now();
    const error = await rejection(short.callTool("slow", "hang", {}, { signal: signal() }));
    expect(error.code).toBe(MCP_ERRORS.timeout);
    expect(Date.now() - started).toBeLessThan(3_000);
  });

  it("fails at its timeout against a socket that accepts and never answers HTTP", async () => {
    const sockets = new Set<Socket>();
    const silent: Server = createServer((socket) => void sockets.add(socket));
    await new Promise<void>((resolve) => silent.listen(0, "127.0.0.1", resolve));
    closers.push(
      () =>
        new Promise<void>((resolve) => {
          for (const socket of sockets) socket.destroy();
          silent.close(() => resolve());
        }),
    );
    const { port } = silent.address() as AddressInfo;
    const { logger } = capturedLogger();
    const upstreams = createMcpUpstreams(mcpSchema.parse({ servers: { mute: { http: { url: `http://127.0.0.1:${port}/mcp` }, timeoutMs: 200 } } }), { log: logger, env: {} });
    closers.push(() => upstreams.close());
    const error = await rejection(upstreams.tools("mute", signal()));
    expect(error.code).toBe(MCP_ERRORS.timeout);
    expect(upstreams.health().mute?.state).toBe("down");
  });

  it("refuses a 100 MB result past mcp.maxResultBytes without reading the rest, and keeps serving", async () => {
    const limit = 1_048_576;
    const { upstreams } = await setUp({ mcp: { maxResultBytes: limit } });
    const error = await rejection(upstreams.callTool("test", "big", { bytes: 100 * 1_048_576 }, { signal: signal() }));
    expect(error.code).toBe(MCP_ERRORS.tooLarge);
    expect(error.message).toContain("mcp.maxResultBytes");
    const read = (error.data as { read: number }).read;
    // What was read is the bound and at most one chunk beyond it, not the 100 MB.
    expect(read).toBeGreaterThan(limit);
    expect(read).toBeLessThan(limit + 1_048_576);
    expect(text(await upstreams.callTool("test", "echo", { text: "still here" }, { signal: signal() }))).toBe("still here");
    // Too large is not the server failing.
    expect(upstreams.health().test?.state).toBe("up");
  });

  it("refuses a too large answer sent as one JSON body as well", async () => {
    const limit = 1_048_576;
    const { upstreams } = await setUp({ server: { jsonResponse: true }, mcp: { maxResultBytes: limit } });
    expect(text(await upstreams.callTool("test", "echo", { text: "json" }, { signal: signal() }))).toBe("json");
    const error = await rejection(upstreams.callTool("test", "big", { bytes: 20 * 1_048_576 }, { signal: signal() }));
    expect(error.code).toBe(MCP_ERRORS.tooLarge);
    expect((error.data as { read: number }).read).toBeLessThan(limit + 1_048_576);
  });

  it("lets progress extend a call past timeoutMs, up to maxTotalTimeoutMs, where it is cancelled upstream", async () => {
    const server = await startMcpTestServer();
    closers.push(() => server.close());
    const { logger } = capturedLogger();
    const upstreams = createMcpUpstreams(mcpSchema.parse({ servers: { drip: { http: { url: server.url }, timeoutMs: 400, maxTotalTimeoutMs: 1_500 } } }), { log: logger, env: {} });
    closers.push(() => upstreams.close());
    const started = Date.now();
    expect(text(await upstreams.callTool("drip", "drip", { steps: 8, intervalMs: 100 }, { signal: signal() }))).toBe("dripped 8");
    expect(Date.now() - started).toBeGreaterThan(400);
    const error = await rejection(upstreams.callTool("drip", "drip", { steps: 1_000, intervalMs: 100 }, { signal: signal() }));
    expect(error.code).toBe(MCP_ERRORS.timeout);
    expect(error.data).toMatchObject({ setting: "maxTotalTimeoutMs" });
    await vi.waitFor(() => expect(server.seen.some((s) => s.method === "notifications/cancelled")).toBe(true));
  });

  it("cuts a listing of 10,000 tools to maxTools and logs the cut once", async () => {
    const server = await startMcpTestServer({ extraTools: 10_000 });
    closers.push(() => server.close());
    const { logger, lines: logged } = capturedLogger();
    const many = createMcpUpstreams(mcpSchema.parse({ servers: { many: { http: { url: server.url }, maxTools: 100 } }, listCacheMs: 0 }), { log: logger, env: {} });
    closers.push(() => many.close());
    expect(await many.tools("many", signal())).toHaveLength(100);
    expect(await many.tools("many", signal())).toHaveLength(100);
    const cuts = logged.filter((l) => l.event === "mcp.listing_bounded");
    expect(cuts).toHaveLength(1);
    expect(cuts[0]).toMatchObject({ server: "many", cutAtMaxTools: true, kept: 100 });
  });

  it("leaves out a tool whose schema nests past maxSchemaDepth or is over maxSchemaBytes, and counts it", async () => {
    const { upstreams, lines } = await setUp({ server: { deepSchema: 200 } });
    const names = (await upstreams.tools("test", signal())).map((t) => t.upstreamName);
    expect(names).toContain("echo");
    expect(names).not.toContain("deep");
    expect(lines.find((l) => l.event === "mcp.listing_bounded")).toMatchObject({ schemaTooDeep: 1, schemaTooLarge: 0 });
  });

  it("opens the breaker after consecutive failures, fails fast while it is open, and closes it after the cool-down", async () => {
    let clock = 1_000_000;
    const server = await startMcpTestServer();
    const url = server.url;
    await server.close();
    const { logger } = capturedLogger();
    const upstreams = createMcpUpstreams(mcpSchema.parse({ servers: { gone: { http: { url }, timeoutMs: 1_000 } } }), { log: logger, env: {}, now: () => clock });
    closers.push(() => upstreams.close());
    for (let i = 0; i < 5; i++) expect((await rejection(upstreams.callTool("gone", "echo", { text: "x" }, { signal: signal() }))).data).not.toMatchObject({ breaker: "open" });
    expect(upstreams.health().gone?.state).toBe("breaker_open");
    const fast = await rejection(upstreams.callTool("gone", "echo", { text: "x" }, { signal: signal() }));
    expect(fast.code).toBe(MCP_ERRORS.upstreamFailed);
    expect(fast.data).toMatchObject({ breaker: "open" });
    clock += 30_000;
    expect(upstreams.health().gone?.state).not.toBe("breaker_open");
    expect((await rejection(upstreams.callTool("gone", "echo", { text: "x" }, { signal: signal() }))).data).not.toMatchObject({ breaker: "open" });
  });
});

describe("listing bounds", () => {
  it("measures depth without recursion, on a nesting far past the stack", () => {
    let deep: Record<string, unknown> = {};
    for (let i = 0; i < 200_000; i++) deep = { next: deep };
    expect(deeperThan(deep, 32)).toBe(true);
    expect(deeperThan({ a: [{ b: 1 }] }, 3)).toBe(false);
    expect(deeperThan({ a: [{ b: {} }] }, 3)).toBe(true);
  });

  it("leaves out schemas over maxSchemaBytes, the output schema too", () => {
    const bounds = { maxSchemaBytes: 1_024, maxSchemaDepth: 32 };
    const big = { type: "object" as const, description: "x".repeat(2_000) };
    expect(schemaProblem({ name: "a", inputSchema: big }, bounds)).toBe("bytes");
    expect(schemaProblem({ name: "a", inputSchema: { type: "object" }, outputSchema: big }, bounds)).toBe("bytes");
    expect(schemaProblem({ name: "a", inputSchema: { type: "object" } }, bounds)).toBeUndefined();
  });

  it("accepts only exposed names clients accept", () => {
    expect(exposedName("github", "create_issue")).toBe("github_create_issue");
    expect(exposedName("github", "has space")).toBeUndefined();
    expect(exposedName("github", "x".repeat(122))).toBeUndefined();
    expect(exposedName("github", "x".repeat(121))).toHaveLength(128);
  });
});
