import { vi } from "vitest";

/**
 * The clock of the gateway's timers and of the simulator's delays,
 * moved by the test: setTimeout, clearTimeout and performance.now are fake;
 * setImmediate and process.nextTick stay real, so streams and undici's
 * handlers run as they do in production while no time passes.
 */
export interface FakeClock {
  /** Moves the clock by `ms`, firing what came due, then lets the work they started run. */
  advance(ms: number): Promise<void>;
}

export function useFakeClock(): FakeClock {
  vi.useFakeTimers({ toFake: ["setTimeout", "clearTimeout", "performance"] });
  return {
    async advance(ms) {
      await vi.advanceTimersByTimeAsync(ms);
      await settled();
    },
  };
}

/**
 * Lets the work already started run (one turn of the event loop): for
 * checking that something did NOT happen yet. Never a way to wait for
 * something that should happen; wait on its event instead.
 */
export function settled(): Promise<void> {
  return new Promise((resolve) => setImmediate(resolve));
}
