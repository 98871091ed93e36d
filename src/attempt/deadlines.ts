import type { TimeoutsConfig } from "../config/schema.js";
import { clampDelay } from "../core/timers.js";
import type { Phase } from "../upstream/phase-timeout.js";

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
