import { randomUUID } from "node:crypto";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import { StreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/streamableHttp.js";
import { z } from "zod";

/**
 * The MCP server of the `mcp` scenario, a process of its own on 127.0.0.1:
 * built with the official SDK as a server author would (streamable HTTP,
 * a session per `initialize`), with one tool, `echo`, that answers its
 * text at once, so that what a call costs is the protocol's and the
 * hops', not the tool's. The direct baseline and the gateway call this
 * same process. It prints `{"url":…}` when it listens, holds at most
 * MAX_SESSIONS sessions (the oldest closed past it) and reads at most
 * MAX_BODY_BYTES of a request.
 */
const MAX_SESSIONS = 1_024;
const MAX_BODY_BYTES = 1_048_576;

function session(): McpServer {
  const mcp = new McpServer({ name: "sluice-bench-mcp", version: "1.0.0" });
  mcp.registerTool("echo", { description: "Echoes text.", inputSchema: { text: z.string().max(65_536) } }, async ({ text }) => ({ content: [{ type: "text", text }] }));
  return mcp;
}

const transports = new Map<string, StreamableHTTPServerTransport>();

const http = createServer(async (req, res) => {
  const chunks: Buffer[] = [];
  let bytes = 0;
  for await (const c of req) {
    bytes += (c as Buffer).length;
    if (bytes > MAX_BODY_BYTES) {
      res.writeHead(413).end();
      return;
    }
    chunks.push(c as Buffer);
  }
  const text = Buffer.concat(chunks).toString("utf8");
  let body: { method?: string } | undefined;
  try {
    body = text ? (JSON.parse(text) as { method?: string }) : undefined;
  } catch {
    res.writeHead(400).end();
    return;
  }
  const id = req.headers["mcp-session-id"];
  let transport = typeof id === "string" ? transports.get(id) : undefined;
  if (!transport) {
    if (id !== undefined || body?.method !== "initialize") {
      res.writeHead(404, { "content-type": "application/json" }).end(JSON.stringify({ jsonrpc: "2.0", error: { code: -32001, message: "Session not found" }, id: null }));
      return;
    }
    if (transports.size >= MAX_SESSIONS) await transports.values().next().value?.close();
    const created = new StreamableHTTPServerTransport({ sessionIdGenerator: () => randomUUID(), onsessioninitialized: (sid) => void transports.set(sid, created) });
    created.onclose = () => {
      if (created.sessionId) transports.delete(created.sessionId);
    };
    await session().connect(created);
    transport = created;
  }
  await transport.handleRequest(req, res, body);
});

http.listen(0, "127.0.0.1", () => {
  process.stdout.write(`${JSON.stringify({ url: `http://127.0.0.1:${(http.address() as AddressInfo).port}/mcp` })}\n`);
});
process.on("SIGTERM", () => {
  for (const t of transports.values()) void t.close();
  http.closeAllConnections();
  http.close(() => process.exit(0));
});
