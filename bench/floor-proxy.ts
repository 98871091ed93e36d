import { createServer } from "node:http";
import { pipeline } from "node:stream/promises";
import { Agent, request } from "undici";
import { createFloorStats } from "./floor-stats.js";

/**
 * The floor: the least an HTTP proxy in Node can do on this machine. It
 * forwards POST /v1/chat/completions to the simulator and streams the answer
 * back byte for byte, with no parsing, routing, limits, telemetry or
 * translation; a client that leaves aborts the upstream request. Measured
 * beside the gateways, its TTFT overhead and abort delay are what the extra
 * process hop itself costs on this machine (two more loopback crossings,
 * one more event loop), below which no gateway logic can go.
 *
 * `GET /_floor/stats` answers what the gateway's `/debug/runtime` answers
 * (bench/floor-stats.ts), so that the capacity scenario measures the floor
 * as it measures the gateway.
 *
 * Usage: node floor-proxy.js UPSTREAM_OPENAI_BASE_URL; prints {"url": ...} when listening.
 */
const upstream = process.argv[2];
if (!upstream) throw new Error("usage: floor-proxy UPSTREAM_OPENAI_BASE_URL");
const dispatcher = new Agent({ keepAliveTimeout: 30_000, pipelining: 1, headersTimeout: 600_000, bodyTimeout: 600_000 });
let activeStreams = 0;
const stats = createFloorStats(() => activeStreams);

const server = createServer(async (req, res) => {
  const [path, search] = (req.url ?? "").split("?");
  if (req.method === "GET" && path === "/_floor/stats") {
    res.writeHead(200, { "content-type": "application/json" }).end(stats(new URLSearchParams(search ?? "")));
    return;
  }
  const controller = new AbortController();
  activeStreams++;
  // The client's socket closing before the answer ended: the upstream goes at once.
  res.once("close", () => {
    activeStreams--;
    if (!res.writableFinished) controller.abort();
  });
  try {
    const body: Buffer[] = [];
    for await (const chunk of req) body.push(chunk as Buffer);
    const answer = await request(`${upstream}${req.url!.replace(/^\/v1/, "")}`, {
      method: "POST",
      headers: { "content-type": "application/json", authorization: req.headers.authorization ?? "" },
      body: Buffer.concat(body),
      signal: controller.signal,
      dispatcher,
    });
    res.writeHead(answer.statusCode, { "content-type": String(answer.headers["content-type"] ?? "application/octet-stream") });
    await pipeline(answer.body, res);
  } catch {
    if (!res.headersSent) res.writeHead(502).end();
    else res.destroy();
  }
});
// The gateway's backlog (src/server/gateway-server.ts), so that a ramp of connections meets both alike.
server.listen({ port: 0, host: "127.0.0.1", backlog: 4096 }, () => {
  const { port } = server.address() as { port: number };
  process.stdout.write(`${JSON.stringify({ url: `http://127.0.0.1:${port}/v1` })}\n`);
});
process.on("SIGTERM", () => process.exit(0));
