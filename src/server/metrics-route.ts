import { once } from "node:events";
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import type { Exchange } from "../http/exchange.js";
import type { AnyRequest, AnyResponse } from "../http/node-http.js";
import type { Metrics } from "../telemetry/metrics.js";

/** GET /metrics on the gateway's own port: Prometheus text exposition. */
export function serveMetrics(metrics: Metrics, req: AnyRequest, res: AnyResponse, exchange: Exchange): void {
  exchange.edge = "http";
  exchange.route = "/metrics";
  exchange.code = "ok";
  // The exporter writes with the response methods both HTTP versions share.
  metrics.handle(req as IncomingMessage, res as ServerResponse);
}

/**
 * A listener of its own for /metrics, for operators who keep it off the
 * public port (bind it to a private interface). A plain HTTP/1.1 server:
 * Node's own header and request timeouts apply to it.
 */
export async function startMetricsListener(metrics: Metrics, host: string, port: number): Promise<{ readonly url: string; close(): Promise<void> }> {
  const server: Server = createServer({ requestTimeout: 10_000, headersTimeout: 5_000, keepAliveTimeout: 5_000 }, (req, res) => {
    if (req.method === "GET" && (req.url ?? "").split("?")[0] === "/metrics") return metrics.handle(req, res);
    res.writeHead(404, { "content-type": "text/plain" });
    res.end("not found\n");
  });
  server.listen(port, host);
  await once(server, "listening");
  const address = server.address() as AddressInfo;
  return {
    url: `http://${host.includes(":") ? `[${host}]` : host}:${address.port}`,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}
