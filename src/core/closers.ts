import { clampDelay } from "./timers.js";

export interface Closers {
  /** Adds the closer of a part that has just started: it runs before every closer added earlier. */
  push(name: string, close: () => unknown): void;
  /**
   * Runs every closer once, the last added first, each bounded by
   * `boundMs`: one that fails or overruns is reported and the rest still
   * run, so a stuck exporter never keeps the database open. Later calls
   * wait for the first.
   */
  close(): Promise<void>;
}

export interface ClosersOptions {
  readonly boundMs: number;
  /** A closer that threw, rejected or did not settle within `boundMs` (then `error` says so). */
  readonly onError: (name: string, error: unknown) => void;
}

/**
 * The parts of a running process, closed in the reverse of the order they
 * started: whatever a part uses started before it, so it is still there
 * while the part closes. The same stack closes a process that failed
 * halfway through starting, with only the parts that had started.
 */
export function createClosers(options: ClosersOptions): Closers {
  const stack: Array<{ readonly name: string; readonly close: () => unknown }> = [];
  let closing: Promise<void> | undefined;

  const bounded = async (name: string, close: () => unknown) => {
    let timer: NodeJS.Timeout | undefined;
    const overrun = new Promise<"overrun">((resolve) => (timer = setTimeout(resolve, clampDelay(options.boundMs), "overrun")));
    try {
      const outcome = await Promise.race([Promise.resolve().then(close), overrun]);
      if (outcome === "overrun") options.onError(name, new Error(`${name} did not close within ${options.boundMs} ms`));
    } catch (error) {
      options.onError(name, error);
    } finally {
      clearTimeout(timer);
    }
  };

  const closeAll = async () => {
    for (let part = stack.pop(); part; part = stack.pop()) await bounded(part.name, part.close);
  };

  return {
    push(name, close) {
      stack.push({ name, close });
    },
    close: () => (closing ??= closeAll()),
  };
}
