import { EventEmitter, once } from "node:events";

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
  /** The W3C `traceparent` the gateway sent. */
  readonly traceparent?: string;
  /** The parsed request body, kept for tagged requests only (tests assert what the gateway sent). */
  readonly body?: unknown;
  /** The `anthropic-beta` header the gateway sent, kept for tagged requests only. */
  readonly betas?: string;
  /** The path and query as sent, kept for tagged requests only (Azure's deployment and `api-version`; Vertex's project, location and publisher). */
  readonly path?: string;
  /** The request headers, kept for tagged requests only; credentials' values read `[credential]`. */
  readonly headers?: Readonly<Record<string, string>>;
  readonly arrivedAt: number;
  headersAt?: number;
  firstTokenAt?: number;
  /** When the stream began waiting at its `hold_at` point for a test's `release`. */
  heldAt?: number;
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

const CREDENTIAL_HEADERS = new Set(["authorization", "api-key", "x-api-key", "x-goog-api-key"]);

/** The headers a record keeps: every one by name, credentials without their value. */
export function recordedHeaders(headers: Readonly<Record<string, string | string[] | undefined>>): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [name, value] of Object.entries(headers)) {
    if (value !== undefined) out[name] = CREDENTIAL_HEADERS.has(name) ? "[credential]" : String(value);
  }
  return out;
}

export interface RecordBook {
  add(record: Omit<RequestRecord, "id">): RequestRecord;
  all(): readonly RequestRecord[];
  /** Signals that a record changed, waking `waitFor` callers. */
  touch(record: RequestRecord): void;
  /** Resolves with the first record matching `predicate` (now or later); rejects after `timeoutMs`. */
  waitFor(predicate: (r: RequestRecord) => boolean, timeoutMs: number): Promise<RequestRecord>;
  /**
   * Holds a stream at its `hold_at` point (setting `heldAt`) until `release`
   * names its tag; resolves false instead if `signal` aborts first (the client left).
   */
  hold(record: RequestRecord, signal: AbortSignal): Promise<boolean>;
  /**
   * Lets every stream tagged `tag` pass its hold: those held now and any that
   * reach it later, so a test never races the stream to its hold point.
   */
  release(tag: string): void;
  clear(): void;
}

/** Bounded: the oldest records are dropped past `limit`, so a soak test cannot grow the simulator. */
export function createRecordBook(limit = 50_000): RecordBook {
  let records: RequestRecord[] = [];
  let nextId = 1;
  const changes = new EventEmitter();
  changes.setMaxListeners(0);
  let released = new Set<string>();
  const releases = new EventEmitter();
  releases.setMaxListeners(0);
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
    async hold(record, signal) {
      record.heldAt = now();
      changes.emit("change", record);
      const tag = record.tag;
      if (tag !== undefined && released.has(tag)) return !signal.aborted;
      try {
        // Untagged: nothing can release it, so it waits for the client to leave.
        await once(releases, tag ?? "", { signal });
        return true;
      } catch {
        return false;
      }
    },
    release(tag) {
      released.add(tag);
      releases.emit(tag);
    },
    clear() {
      records = [];
      released = new Set();
    },
  };
}
