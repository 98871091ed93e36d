import { type ControlOp, isTerminal, type LogEntry, notFound, type StreamLog, type StreamMeta } from "./stream-log.js";

interface Kept {
  readonly meta: StreamMeta;
  readonly entries: LogEntry[];
  /** Readers waiting for the next entry (or the expiry). */
  readonly waiters: Set<() => void>;
  lastWrite: number;
  timer?: NodeJS.Timeout;
}

export interface MemoryStreamLogOptions {
  readonly retentionMs: number;
  /** Tests: the clock retention is measured on. */
  readonly now?: () => number;
}

/**
 * The stream log of a gateway without Redis: one replica's streams, in
 * memory, each dropped `retentionMs` after its last write. Resumes work on
 * this replica only.
 */
export function createMemoryStreamLog(options: MemoryStreamLogOptions): StreamLog {
  const now = options.now ?? Date.now;
  const streams = new Map<string, Kept>();
  const listeners = new Set<(id: string, op: ControlOp) => void>();

  const wake = (kept: Kept) => {
    for (const waiter of kept.waiters) waiter();
    kept.waiters.clear();
  };
  const schedule = (id: string, kept: Kept, delay: number) => {
    kept.timer = setTimeout(() => {
      const idle = now() - kept.lastWrite;
      if (idle < options.retentionMs) return schedule(id, kept, options.retentionMs - idle);
      streams.delete(id);
      wake(kept);
    }, delay);
    kept.timer.unref();
  };

  return {
    async open(id, meta) {
      const kept: Kept = { meta, entries: [], waiters: new Set(), lastWrite: now() };
      streams.set(id, kept);
      schedule(id, kept, options.retentionMs);
    },
    async append(id, entries, _encoded) {
      const kept = streams.get(id);
      if (!kept) return;
      kept.entries.push(...entries);
      kept.lastWrite = now();
      wake(kept);
    },
    async meta(id) {
      return streams.get(id)?.meta;
    },
    async *read(id, signal) {
      const kept = streams.get(id);
      if (!kept) throw notFound(id);
      for (let i = 0; ; ) {
        while (i < kept.entries.length) {
          const entry = kept.entries[i++]!;
          yield entry;
          if (isTerminal(entry.record)) return;
        }
        if (streams.get(id) !== kept) throw notFound(id);
        signal.throwIfAborted();
        await new Promise<void>((resolve) => {
          const done = () => {
            signal.removeEventListener("abort", done);
            kept.waiters.delete(done);
            resolve();
          };
          kept.waiters.add(done);
          signal.addEventListener("abort", done, { once: true });
        });
      }
    },
    async publish(id, op) {
      for (const listener of listeners) listener(id, op);
    },
    subscribe(listener) {
      listeners.add(listener);
      return () => listeners.delete(listener);
    },
    async close() {
      for (const kept of streams.values()) {
        clearTimeout(kept.timer);
        wake(kept);
      }
      streams.clear();
    },
  };
}
