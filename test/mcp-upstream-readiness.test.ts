import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { afterEach, describe, expect, it } from "vitest";
import { mcpSchema } from "../src/config/mcp-schema.js";
import { createHealthState } from "../src/health/health-state.js";
import type { Exchange } from "../src/http/exchange.js";
import { reportMcpHealth } from "../src/mcp/upstream/readiness-details.js";
import { createMcpUpstreams } from "../src/mcp/upstream/upstreams.js";
import { handleHealth } from "../src/server/health.js";
import { capturedLogger } from "./helpers/captured-logger.js";
import { startMcpTestServer } from "./helpers/mcp-test-server.js";

const closers: Array<() => Promise<void>> = [];
afterEach(async () => {
  while (closers.length > 0) await closers.pop()?.();
});

describe("/readyz and the MCP servers", () => {
  it("shows each server's health in details, and stays ready while one server is down", async () => {
    const up = await startMcpTestServer();
    closers.push(() => up.close());
    const gone = await startMcpTestServer();
    const goneUrl = gone.url;
    await gone.close();
    const { logger } = capturedLogger();
    const upstreams = createMcpUpstreams(mcpSchema.parse({ servers: { ok: { http: { url: up.url } }, gone: { http: { url: goneUrl }, timeoutMs: 1_000 } } }), { log: logger, env: {} });
    closers.push(() => upstreams.close());
    await upstreams.tools("ok", new AbortController().signal);
    await upstreams.tools("gone", new AbortController().signal).catch(() => {});

    const health = createHealthState();
    health.setReady(true);
    const stop = reportMcpHealth(health, upstreams);
    const server = createServer((req, res) => {
      handleHealth(req, res, { edge: "health", route: "", code: undefined, fields: {} } as unknown as Exchange, health);
    });
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    closers.push(() => new Promise<void>((resolve) => server.close(() => resolve())));
    const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/readyz`;

    const ready = await fetch(url);
    expect(ready.status).toBe(200);
    const body = (await ready.json()) as { status: string; details: { mcp: { servers: Record<string, { state: string; tools: number; transport: string }> } } };
    expect(body.status).toBe("ready");
    expect(body.details.mcp.servers.ok).toMatchObject({ state: "up", transport: "http" });
    expect(body.details.mcp.servers.ok?.tools).toBeGreaterThan(0);
    expect(body.details.mcp.servers.gone).toMatchObject({ state: "down", transport: "http", tools: 0 });

    stop();
    expect(await (await fetch(url)).json()).toEqual({ status: "ready" });
  });
});
