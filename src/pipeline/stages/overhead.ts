import type { UpstreamWindow } from "../../core/call-summary.js";
import type { AttemptObserver, StreamObserver } from "../../flow/observer.js";
import type { Stage } from "../stage.js";

/**
 * The stream's observer, stamping the call's upstream window on the way:
 * the first upstream request sent (by any attempt) and the first delta
 * decoded (the attempt that commits). Only the attempts' once-per-attempt
 * hooks are wrapped; `delta` is the inner observer's own, so the
 * per-delta path pays nothing.
 */
function windowed(inner: StreamObserver, window: UpstreamWindow): StreamObserver {
  return {
    attemptStarted(info) {
      const attempt = inner.attemptStarted(info);
      const timed: AttemptObserver = {
        headers: attempt.headers,
        admitted: (waitMs) => attempt.admitted(waitMs),
        sent() {
          window.sentAt ??= performance.now();
          attempt.sent?.();
        },
        firstDelta() {
          window.answeredAt ??= performance.now();
          attempt.firstDelta();
        },
        afterAbort: (deltas) => attempt.afterAbort(deltas),
      };
      return timed;
    },
    attemptEnded: (record) => inner.attemptEnded(record),
    committed: (records) => inner.committed(records),
    delta: inner.delta,
    ended: inner.ended,
  };
}

/**
 * Bounds the call's wait on its upstream (CallSummary.upstream) so the
 * call layer can say what the gateway itself added before the client's
 * first byte (`sluice-overhead-ms`, call/overhead.ts). Right after
 * `telemetry`, whose observer it wraps: the attempts report through it.
 * Its end stamps the call's end, which bounds a whole answer's wait.
 */
export function overheadStage(): Stage {
  return {
    name: "overhead",
    open(call) {
      const window = call.summary.upstream;
      call.observer = windowed(call.observer, window);
      return {
        end: () => {
          window.endedAt ??= performance.now();
        },
      };
    },
  };
}
