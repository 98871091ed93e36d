import type { ConnectNodeAdapterOptions } from "@connectrpc/connect-node";

type Fallback = NonNullable<ConnectNodeAdapterOptions["fallback"]>;
/** A Node HTTP/1.1 or HTTP/2 request, as connect-node hands it to non-RPC routes. */
export type AnyRequest = Parameters<Fallback>[0];
export type AnyResponse = Parameters<Fallback>[1];

/** Liveness and readiness: what a load balancer or orchestrator polls. */
export interface HealthState {
  /** False once draining begins: stop sending new work here. */
  ready: boolean;
}

function json(res: AnyResponse, status: number, body: unknown): void {
  const text = JSON.stringify(body);
  res.writeHead(status, { "content-type": "application/json", "content-length": Buffer.byteLength(text) });
  res.end(text);
}

/** Serves /healthz and /readyz; returns false for any other path. */
export function handleHealth(req: AnyRequest, res: AnyResponse, state: HealthState): boolean {
  if (req.method !== "GET" && req.method !== "HEAD") return false;
  const path = (req.url ?? "/").split("?")[0];
  if (path === "/healthz") {
    json(res, 200, { status: "ok" });
    return true;
  }
  if (path === "/readyz") {
    json(res, state.ready ? 200 : 503, { status: state.ready ? "ready" : "draining" });
    return true;
  }
  return false;
}

export function notFound(res: AnyResponse): void {
  json(res, 404, { error: { message: "not found", type: "not_found" } });
}
