import type { TimeoutsConfig } from "../config/schema.js";

export type Phase = "headers" | "first_token" | "idle" | "total";

/**
 * Watches one upstream exchange phase by phase and calls `onExpire` once,
 * with the phase that ran out. The idle clock runs only while we wait for
 * upstream bytes, never while we hold the stream paused for a slow client:
 * backpressure is not upstream silence.
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

export function createPhaseTimer(timeouts: TimeoutsConfig, onExpire: (phase: Phase, limitMs: number) => void): PhaseTimer {
  let expired = false;
  const expire = (phase: Phase, limitMs: number) => {
    if (expired) return;
    expired = true;
    stop();
    onExpire(phase, limitMs);
  };
  const total = setTimeout(expire, timeouts.totalMs, "total", timeouts.totalMs);
  let headers: NodeJS.Timeout | undefined = setTimeout(expire, timeouts.headersMs, "headers", timeouts.headersMs);
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
      if (!expired) firstToken = setTimeout(expire, timeouts.firstTokenMs, "first_token", timeouts.firstTokenMs);
    },
    waiting() {
      if (expired) return;
      isWaiting = true;
      if (idle) idle.refresh();
      else idle = setTimeout(() => isWaiting && expire("idle", timeouts.idleMs), timeouts.idleMs);
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
