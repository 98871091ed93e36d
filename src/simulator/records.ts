import { EventEmitter } from "node:events";

/** Epoch milliseconds with sub-millisecond precision, comparable across processes on one machine. */
export function now(): number {
  return performance.timeOrigin + performance.now();
}

export type Outcome = "streaming" | "stalled" | "completed" | "client_closed" | "failed";

/** What the simulator observed about one request; readable by tests and benchmarks. */
export interface RequestRecord {
  readonly id: number;
  readonly format: string;
  readonly model: string;
  readonly tag?: string;
  /** The `x-request-id` the gateway sent, for correlation. */
  readonly requestId?: string;
  /** The parsed request body, kept for tagged requests only (tests assert what the gateway sent). */
  readonly body?: unknown;
  readonly arrivedAt: number;
  headersAt?: number;
  firstTokenAt?: number;
  /** When the client closed the connection before the response was complete. */
  clientClosedAt?: number;
  endedAt?: number;
  tokensWritten: number;
  /** Tokens written after the client had gone: work done for nobody. */
  tokensAfterClose: number;
  bytesWritten: number;
  /**
   * True while the simulator waits for the client to take more bytes (its
   * socket buffer is full): the moment a test can know, without a clock,
   * that backpressure has reached the upstream.
   */
  waitingForDrain?: boolean;
  outcome: Outcome;
}

export interface RecordBook {
  add(record: Omit<RequestRecord, "id">): RequestRecord;
  all(): readonly RequestRecord[];
  /** Signals that a record changed, waking `waitFor` callers. */
  touch(record: RequestRecord): void;
  /** Resolves with the first record matching `predicate` (now or later); rejects after `timeoutMs`. */
  waitFor(predicate: (r: RequestRecord) => boolean, timeoutMs: number): Promise<RequestRecord>;
  clear(): void;
}

/** Bounded: the oldest records are dropped past `limit`, so a soak test cannot grow the simulator. */
export function createRecordBook(limit = 50_000): RecordBook {
  let records: RequestRecord[] = [];
  let nextId = 1;
  const changes = new EventEmitter();
  changes.setMaxListeners(0);
  return {
    add(fields) {
      const record: RequestRecord = { id: nextId++, ...fields };
      records.push(record);
      if (records.length > limit) records = records.slice(records.length - limit / 2);
      changes.emit("change", record);
      return record;
    },
    all: () => records,
    touch(record) {
      changes.emit("change", record);
    },
    waitFor(predicate, timeoutMs) {
      const existing = records.find(predicate);
      if (existing) return Promise.resolve(existing);
      return new Promise((resolve, reject) => {
        const onChange = (record: RequestRecord) => {
          if (!predicate(record)) return;
          cleanup();
          resolve(record);
        };
        const timer = setTimeout(() => {
          cleanup();
          reject(new Error(`no matching simulator record within ${timeoutMs} ms`));
        }, timeoutMs);
        const cleanup = () => {
          clearTimeout(timer);
          changes.off("change", onChange);
        };
        changes.on("change", onChange);
      });
    },
    clear() {
      records = [];
    },
  };
}
