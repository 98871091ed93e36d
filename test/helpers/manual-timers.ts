import { EventEmitter, once } from "node:events";
import type { Timers } from "../../src/core/timers.js";

/** Timers that fire only when the test moves the clock: cadence is tested by steps, never by sleeping. */
export interface ManualTimers extends Timers {
  /** Moves the clock by `ms` and fires every timer that came due, in order. */
  advance(ms: number): void;
  /** Timers scheduled and not yet fired or cleared. */
  readonly pending: number;
  /** Resolves once at least `count` timers are pending (now or later). */
  whenPending(count: number): Promise<void>;
  /** Resolves once at most `count` timers are pending (the others fired or were cleared). */
  whenAtMost(count: number): Promise<void>;
  /** Resolves once no timer is pending. */
  whenIdle(): Promise<void>;
}

export function createManualTimers(startMs = Date.UTC(2026, 0, 1)): ManualTimers {
  let now = startMs;
  let nextId = 1;
  const timers = new Map<number, { at: number; callback: () => void }>();
  const changes = new EventEmitter();
  return {
    now: () => now,
    setTimeout(callback, ms) {
      const id = nextId++;
      timers.set(id, { at: now + Math.max(0, ms), callback });
      changes.emit("change");
      return id;
    },
    clearTimeout(handle) {
      if (timers.delete(handle as number)) changes.emit("change");
    },
    advance(ms) {
      const until = now + ms;
      for (;;) {
        const due = [...timers].filter(([, t]) => t.at <= until).sort((a, b) => a[1].at - b[1].at || a[0] - b[0])[0];
        if (!due) break;
        timers.delete(due[0]);
        now = Math.max(now, due[1].at);
        due[1].callback();
      }
      now = until;
    },
    get pending() {
      return timers.size;
    },
    async whenPending(count) {
      while (timers.size < count) await once(changes, "change");
    },
    async whenAtMost(count) {
      while (timers.size > count) await once(changes, "change");
    },
    whenIdle() {
      return this.whenAtMost(0);
    },
  };
}
