import type { Client } from "@modelcontextprotocol/sdk/client/index.js";
import type { ServerHealth } from "../contract.js";

/** What a call needs of its server's connection besides the request itself. */
export interface LinkCallOptions {
  readonly signal: AbortSignal;
  readonly sessionId?: string;
  readonly bearer?: string;
  /** Bounds the connect (initialize) a call may have to wait for. */
  readonly timeoutMs: number;
}

/**
 * One configured server's connection, HTTP (http-link.ts) or stdio
 * (stdio-link.ts); upstreams.ts puts the breaker, the timeouts, the bounds
 * and the listings' cache around it, the same for both.
 */
export interface ServerLink {
  readonly transport: ServerHealth["transport"];
  /** Runs `request` on the client this call should use (its sealed session's, or the long-lived one); `fresh` says a sealed session had expired upstream and a new one served it. */
  run<T>(options: LinkCallOptions, request: (client: Client) => Promise<T>): Promise<T>;
  /** A new upstream session's id (HTTP only). */
  openSession?(signal: AbortSignal, timeoutMs: number): Promise<string>;
  state(): "up" | "starting" | "down";
  readonly lastError?: string;
  readonly restarts?: number;
  close(): Promise<void>;
}

/** Waits for a connection that others share with this call's own signal: leaving does not end it for them. */
export function whileNotAborted<T>(shared: Promise<T>, signal: AbortSignal): Promise<T> {
  if (signal.aborted) return Promise.reject(signal.reason);
  return new Promise((resolve, reject) => {
    const abort = () => reject(signal.reason);
    signal.addEventListener("abort", abort, { once: true });
    shared.then(resolve, reject).finally(() => signal.removeEventListener("abort", abort));
  });
}
