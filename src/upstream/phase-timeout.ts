import type { TimeoutsConfig } from "../config/schema.js";
import { GatewayError } from "../core/errors.js";

export type Phase = "connect" | "headers" | "first_token" | "idle" | "total";

/**
 * The one place upstream phase limits are worded. The attempt's phase timer
 * (attempt/deadlines.ts) enforces every phase but `connect`, which only the
 * HTTP client can see (undici's connect timeout, transport-errors.ts); both
 * name the phase the same way, and both stand on this file.
 */
export function phaseTimeout(phase: Phase, provider: string, timeouts: TimeoutsConfig, cause?: unknown): GatewayError {
  const message = {
    connect: `connect timeout: provider ${provider} did not accept a connection within ${timeouts.connectMs} ms`,
    headers: `headers timeout: provider ${provider} sent no response headers within ${timeouts.headersMs} ms`,
    first_token: `first-token timeout: provider ${provider} sent no content within ${timeouts.firstTokenMs} ms of its response headers`,
    idle: `idle timeout: provider ${provider} sent nothing for ${timeouts.idleMs} ms`,
    total: `total timeout: provider ${provider} did not finish within ${timeouts.totalMs} ms`,
  }[phase];
  return new GatewayError("upstream_timeout", message, { provider, ...(cause === undefined ? {} : { cause }) });
}
