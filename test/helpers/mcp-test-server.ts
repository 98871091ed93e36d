import { randomUUID } from "node:crypto";
import { createServer, type IncomingMessage, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import { StreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/streamableHttp.js";
import { z } from "zod";

/** One request the test server received, as it arrived. */
export interface SeenRequest {
  readonly method: string;
  readonly tool?: string;
  /** A tools/call's arguments as they arrived (what left the gateway). */
  readonly arguments?: unknown;
  readonly sessionId?: string;
  readonly authorization?: string;
  readonly headers: Readonly<Record<string, string | string[] | undefined>>;
}

/**
 * A real MCP server over streamable HTTP, built with the official SDK as a
 * server author would, for tests of the gateway's upstream side. Stateful:
 * each `initialize` opens a session (its own counter for `count`), so a
 * session continued on another gateway replica is seen as the same one.
 * Tools: echo, add, count, slow (progress), big (a result of n bytes),
 * fail (isError), whoami (the Authorization it received), hang (never
 * answers), drip (progress every intervalMs: a long call kept alive), and any added later with `addTool` (which notifies
 * `tools/list_changed` to every session).
 */
export interface McpTestServer {
  readonly url: string;
  readonly seen: SeenRequest[];
  /** Tools/call requests seen, by tool. */
  calls(tool: string): SeenRequest[];
  addTool(name: string): void;
  sessions(): number;
  close(): Promise<void>;
}

export interface McpTestServerOptions {
  /** Extra tools named `tool_0` … `tool_{n-1}` (a server that lists many). */
  readonly extraTools?: number;
  /** A tool whose inputSchema nests this deep. */
  readonly deepSchema?: number;
  /** Answer POSTs with one JSON body instead of an SSE stream (the SDK's `enableJsonResponse`). */
  readonly jsonResponse?: boolean;
}

export async function startMcpTestServer(options: McpTestServerOptions = {}): Promise<McpTestServer> {
  const seen: SeenRequest[] = [];
  const transports = new Map<string, StreamableHTTPServerTransport>();
  const servers = new Set<McpServer>();
  const added: string[] = [];

  const build = (sessionCounter: { n: number }, headersOf: () => IncomingMessage["headers"]) => {
    const mcp = new McpServer({ name: "sluice-test-server", version: "1.0.0" }, { capabilities: { tools: { listChanged: true }, prompts: {}, resources: {} } });
    mcp.registerTool("echo", { description: "Echoes text.", inputSchema: { text: z.string() } }, async ({ text }) => ({ content: [{ type: "text", text }] }));
    mcp.registerTool("add", { description: "Adds two numbers.", inputSchema: { a: z.number(), b: z.number() } }, async ({ a, b }) => ({ content: [{ type: "text", text: String(a + b) }] }));
    mcp.registerTool("count", { description: "Counts calls in this session." }, async () => ({ content: [{ type: "text", text: String(++sessionCounter.n) }] }));
    mcp.registerTool("slow", { description: "Reports progress steps, then answers.", inputSchema: { steps: z.number().int().min(1).max(100) } }, async ({ steps }, extra) => {
      const token = extra._meta?.progressToken;
      for (let i = 1; i <= steps; i++) {
        if (token !== undefined) await extra.sendNotification({ method: "notifications/progress", params: { progressToken: token, progress: i, total: steps } });
      }
      return { content: [{ type: "text", text: `done ${steps}` }] };
    });
    mcp.registerTool("big", { description: "Answers n bytes of text.", inputSchema: { bytes: z.number().int().min(0) } }, async ({ bytes }) => ({ content: [{ type: "text", text: "x".repeat(bytes) }] }));
    mcp.registerTool("fail", { description: "Answers a tool error.", inputSchema: { message: z.string() } }, async ({ message }) => ({ isError: true, content: [{ type: "text", text: message }] }));
    mcp.registerTool("whoami", { description: "Answers the Authorization header it received." }, async () => ({ content: [{ type: "text", text: String(headersOf().authorization ?? "") }] }));
    mcp.registerTool(
      "drip",
      { description: "Reports progress every intervalMs, steps times, then answers.", inputSchema: { steps: z.number().int().min(1).max(1_000), intervalMs: z.number().int().min(1).max(10_000) } },
      async ({ steps, intervalMs }, extra) => {
        const token = extra._meta?.progressToken;
        for (let i = 1; i <= steps && !extra.signal.aborted; i++) {
          await new Promise((resolve) => setTimeout(resolve, intervalMs));
          if (token !== undefined && !extra.signal.aborted) await extra.sendNotification({ method: "notifications/progress", params: { progressToken: token, progress: i, total: steps } });
        }
        return { content: [{ type: "text", text: `dripped ${steps}` }] };
      },
    );
    mcp.registerTool("hang", { description: "Never answers until cancelled." }, async (extra) => {
      await new Promise<void>((resolve) => extra.signal.addEventListener("abort", () => resolve(), { once: true }));
      return { content: [{ type: "text", text: "cancelled" }] };
    });
    for (let i = 0; i < (options.extraTools ?? 0); i++) mcp.registerTool(`tool_${i}`, { description: `Extra tool ${i}.` }, async () => ({ content: [{ type: "text", text: String(i) }] }));
    if (options.deepSchema) {
      let schema: z.ZodType = z.string();
      for (let i = 0; i < options.deepSchema; i++) schema = z.object({ next: schema });
      mcp.registerTool("deep", { description: "A deeply nested input.", inputSchema: { root: schema } }, async () => ({ content: [{ type: "text", text: "deep" }] }));
    }
    for (const name of added) mcp.registerTool(name, { description: `Added ${name}.` }, async () => ({ content: [{ type: "text", text: name }] }));
    mcp.registerPrompt("greet", { description: "A greeting.", argsSchema: { who: z.string() } }, ({ who }) => ({ messages: [{ role: "user", content: { type: "text", text: `Hello, ${who}` } }] }));
    mcp.registerResource("readme", "test://readme", { description: "A readme.", mimeType: "text/plain" }, async (uri) => ({ contents: [{ uri: uri.href, text: "read me" }] }));
    servers.add(mcp);
    return mcp;
  };

  let current: IncomingMessage["headers"] = {};
  const http: Server = createServer(async (req, res) => {
    const chunks: Buffer[] = [];
    for await (const c of req) chunks.push(c as Buffer);
    const text = Buffer.concat(chunks).toString("utf8");
    const body = text ? (JSON.parse(text) as { method?: string; params?: { name?: string; arguments?: unknown } }) : undefined;
    const sessionId = req.headers["mcp-session-id"] as string | undefined;
    if (body?.method)
      seen.push({
        method: body.method,
        ...(body.params?.name ? { tool: body.params.name } : {}),
        ...(body.params?.arguments !== undefined ? { arguments: body.params.arguments } : {}),
        ...(sessionId ? { sessionId } : {}),
        ...(req.headers.authorization ? { authorization: req.headers.authorization } : {}),
        headers: { ...req.headers },
      });
    current = req.headers;
    let transport = sessionId ? transports.get(sessionId) : undefined;
    if (!transport) {
      if (sessionId || body?.method !== "initialize") {
        res.writeHead(404, { "content-type": "application/json" }).end(JSON.stringify({ jsonrpc: "2.0", error: { code: -32001, message: "Session not found" }, id: null }));
        return;
      }
      const counter = { n: 0 };
      const created = new StreamableHTTPServerTransport({ sessionIdGenerator: () => randomUUID(), enableJsonResponse: options.jsonResponse ?? false, onsessioninitialized: (id) => void transports.set(id, created) });
      created.onclose = () => {
        if (created.sessionId) transports.delete(created.sessionId);
      };
      await build(counter, () => current).connect(created);
      transport = created;
    }
    await transport.handleRequest(req, res, body);
  });
  await new Promise<void>((resolve) => http.listen(0, "127.0.0.1", resolve));
  const port = (http.address() as AddressInfo).port;
  return {
    url: `http://127.0.0.1:${port}/mcp`,
    seen,
    calls: (tool) => seen.filter((s) => s.method === "tools/call" && s.tool === tool),
    addTool(name) {
      added.push(name);
      for (const mcp of servers) {
        mcp.registerTool(name, { description: `Added ${name}.` }, async () => ({ content: [{ type: "text", text: name }] }));
      }
    },
    sessions: () => transports.size,
    async close() {
      for (const t of transports.values()) await t.close().catch(() => {});
      http.closeAllConnections();
      await new Promise<void>((resolve) => http.close(() => resolve()));
    },
  };
}
