import type { TimeoutsConfig } from "../config/schema.js";
import { GatewayError } from "../core/errors.js";
import { clampDelay } from "../core/timers.js";

export type Phase = "connect" | "headers" | "first_token" | "idle" | "total";

/**
 * The one place upstream phase limits are worded. The phase timer below
 * enforces every phase but `connect`, which only the HTTP client can see
 * (undici's connect timeout); both name the phase the same way.
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

/**
 * Watches one upstream attempt phase by phase and calls `onExpire` once,
 * with the phase that ran out. The idle clock runs only while we wait for
 * upstream bytes, never while we hold the stream paused for a slow client:
 * backpressure is not upstream silence. This is the single owner of the
 * headers, first-token, idle and total limits (undici's own headers and body
 * timeouts are switched off, so no limit is enforced twice).
 */
export interface PhaseTimer {
  /** Response headers arrived: the headers clock stops, the first-token clock starts. */
  headers(): void;
  /** We asked upstream for more bytes. */
  waiting(): void;
  /** Bytes arrived (content or a ping). */
  received(): void;
  /** The first content delta was produced. */
  firstDelta(): void;
  stop(): void;
}

export function createPhaseTimer(timeouts: TimeoutsConfig, onExpire: (phase: Phase) => void): PhaseTimer {
  let expired = false;
  const expire = (phase: Phase) => {
    if (expired) return;
    expired = true;
    stop();
    onExpire(phase);
  };
  const total = setTimeout(expire, clampDelay(timeouts.totalMs), "total");
  let headers: NodeJS.Timeout | undefined = setTimeout(expire, clampDelay(timeouts.headersMs), "headers");
  let firstToken: NodeJS.Timeout | undefined;
  // One timer for the whole stream, re-armed with refresh(): no allocation per read.
  let idle: NodeJS.Timeout | undefined;
  let isWaiting = false;

  function stop(): void {
    clearTimeout(total);
    clearTimeout(headers);
    clearTimeout(firstToken);
    clearTimeout(idle);
    headers = firstToken = idle = undefined;
  }

  return {
    headers() {
      clearTimeout(headers);
      headers = undefined;
      if (!expired) firstToken = setTimeout(expire, clampDelay(timeouts.firstTokenMs), "first_token");
    },
    waiting() {
      if (expired) return;
      isWaiting = true;
      if (idle) idle.refresh();
      else idle = setTimeout(() => isWaiting && expire("idle"), clampDelay(timeouts.idleMs));
    },
    received() {
      isWaiting = false;
    },
    firstDelta() {
      clearTimeout(firstToken);
      firstToken = undefined;
    },
    stop,
  };
}
