import type { TimeoutsConfig } from "../config/schema.js";
import { GatewayError } from "../core/errors.js";
import { phaseTimeout } from "./phase-timeout.js";

const CONNECTION_CODES = new Set(["ECONNREFUSED", "ECONNRESET", "EPIPE", "ENOTFOUND", "EAI_AGAIN", "EHOSTUNREACH", "ENETUNREACH", "ETIMEDOUT", "UND_ERR_SOCKET", "UND_ERR_CLOSED", "UND_ERR_DESTROYED", "UND_ERR_ABORTED"]);

function codeOf(error: unknown): string | undefined {
  for (let e: unknown = error, depth = 0; e && depth < 4; e = (e as { cause?: unknown }).cause, depth++) {
    const code = (e as { code?: unknown }).code;
    if (typeof code === "string" && (code.startsWith("UND_ERR") || CONNECTION_CODES.has(code))) return code;
  }
  return undefined;
}

export interface TransportErrorContext {
  readonly provider: string;
  readonly timeouts: TimeoutsConfig;
  /** Whether response headers had arrived: the same reset means different things before and after. */
  readonly phase: "connect" | "stream";
}

/**
 * Turns an undici/socket failure into a GatewayError whose message names the
 * provider and the phase, never the URL's credentials or a header. Branches
 * on error codes, not messages.
 */
export function fromTransportError(error: unknown, ctx: TransportErrorContext): GatewayError {
  if (error instanceof GatewayError) return error;
  const { provider, timeouts } = ctx;
  const code = codeOf(error);
  const options = { provider, cause: error };
  switch (code) {
    // The only phase limit undici enforces: the phase timer owns the others.
    case "UND_ERR_CONNECT_TIMEOUT":
      return phaseTimeout("connect", provider, timeouts, error);
    default:
      if (code !== undefined) {
        return ctx.phase === "connect" ? new GatewayError("upstream_unavailable", `cannot reach provider ${provider}`, options) : new GatewayError("upstream_unavailable", `provider ${provider} closed the connection mid-stream`, options);
      }
      return new GatewayError("internal", "internal error", options);
  }
}
