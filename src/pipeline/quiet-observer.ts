import type { AttemptObserver, StreamObserver } from "../flow/observer.js";

const QUIET_ATTEMPT: AttemptObserver = Object.freeze({ headers: {}, admitted: () => undefined, firstDelta: () => undefined, afterAbort: () => undefined });

/** The observer of a call before its telemetry stage opened (and of one whose table has none): it hears and keeps nothing. */
export const QUIET_OBSERVER: StreamObserver = Object.freeze({
  attemptStarted: () => QUIET_ATTEMPT,
  attemptEnded: () => undefined,
  committed: () => undefined,
  delta: () => undefined,
  ended: () => undefined,
});
