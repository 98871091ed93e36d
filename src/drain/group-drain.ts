import { backoffDelay } from "../core/backoff.js";
import type { SluiceRedisClient } from "../store/redis-connection.js";
import { firstStreamOf, messagesOf, type RawStreamEntry } from "../store/redis-replies.js";
import { within } from "../store/within.js";
import { type BatchResult, causeOf, MAX_BACKOFF_MS, settleWithin, type WriterEvent } from "./batch-writer.js";
import { createIsolatingWriter, type IsolatedResult, type Isolation } from "./isolate.js";

/** One stream entry as read. */
export interface StreamEntry {
  readonly id: string;
  readonly message: Readonly<Record<string, string>>;
}

export interface GroupDrainOptions {
  readonly client: SluiceRedisClient;
  readonly stream: string;
  readonly group: string;
  /** This replica's name in the group. */
  readonly consumer: string;
  /** Starts the message of a Redis command's timeout (`<label> claim: no answer…`); the group's name by default. */
  readonly label?: string;
  /** Writes one batch; the entries are acknowledged only once it resolves. It must be idempotent (an entry may come twice). */
  readonly write: (entries: readonly StreamEntry[]) => Promise<BatchResult>;
  /**
   * How an entry the database refuses is named and kept aside: it is
   * isolated (its batch's good entries land), tried again at the next
   * drains, then dead-lettered and acknowledged, so one bad entry never
   * holds the stream (drain/isolate.ts).
   */
  readonly isolation: Isolation<StreamEntry>;
  readonly batchSize: number;
  readonly flushMs: number;
  /** Entries another consumer read but has not acknowledged for this long are taken over (it died mid-batch). */
  readonly claimIdleMs: number;
  /** Bound on every Redis command. */
  readonly timeoutMs: number;
  readonly onEvent: (event: WriterEvent) => void;
}

export interface GroupDrain {
  /**
   * Drains until nothing new is there (tests, flush, shutdown); resolves with the entries written or
   * found written, 0 after a failure (reported and backed off from, not thrown). It waits for a drain
   * the interval started, then runs its own: one drain at a time, so this consumer never reads and
   * writes its pending entries twice at once.
   */
  drainNow(): Promise<number>;
  close(graceMs: number): Promise<void>;
}

/**
 * A Redis stream written to a database by every replica as one consumer
 * group: each entry goes to one replica, is written, and only then
 * acknowledged. Nothing is lost to a database outage (entries stay pending,
 * bounded by the stream's cap) or to a replica killed mid-batch (another
 * claims its entries after `claimIdleMs`, and the idempotent write makes
 * the second write a no-op). Reads do not block: the connection is the
 * tenant store's, and a blocking read would hold it. The spend ledger
 * (ledger/stream-drain.ts, the usage stream) and the audit log (its audit
 * stream) are this with their own write; the policy lives here once.
 */
export function createGroupDrain(options: GroupDrainOptions): GroupDrain {
  const { client, stream, group, consumer } = options;
  let timer: NodeJS.Timeout | undefined;
  let running: Promise<number> | undefined;
  let closed = false;
  let groupReady = false;
  let failing = false;
  /** Failed writes in a row: the wait before the next try doubles with each. */
  let failures = 0;
  let claimCursor = "0-0";
  let lost = 0;
  const label = options.label ?? group;
  const redis = <T>(work: Promise<T>, operation: string) => within(work, options.timeoutMs, `${label} ${operation}`);

  const ensureGroup = async () => {
    if (groupReady) return;
    try {
      // From the start of the stream: entries added before any replica drained are written too.
      await redis(client.xgroup("CREATE", stream, group, "0", "MKSTREAM"), "group");
    } catch (error) {
      if (!(error instanceof Error && error.message.includes("BUSYGROUP"))) throw error;
    }
    groupReady = true;
  };

  const writeBatch: (entries: readonly StreamEntry[]) => Promise<IsolatedResult<StreamEntry>> = createIsolatingWriter(options.write, options.isolation);

  /**
   * Writes then acknowledges one batch, but for the entries the database
   * refused and that wait for another try; resolves with the entries done
   * and those kept (a drain stops at a kept one: the next try is the next
   * drain's, never the same instant's).
   */
  const write = async (entries: readonly StreamEntry[]): Promise<{ readonly done: number; readonly kept: number }> => {
    if (entries.length === 0) return { done: 0, kept: 0 };
    const result = await writeBatch(entries);
    const kept = new Set(result.kept.map((e) => e.id));
    const done = entries.filter((e) => !kept.has(e.id)).map((e) => e.id);
    if (done.length > 0) await redis(client.xack(stream, group, ...done), "ack");
    options.onEvent({ type: "written", written: result.written, duplicates: result.duplicates });
    if (result.deadLettered.length > 0) options.onEvent({ type: "dead_lettered", letters: result.deadLettered.map((l) => ({ id: l.id, code: l.code })) });
    if (result.kept.length > 0) options.onEvent({ type: "refused", count: result.kept.length });
    return { done: done.length, kept: kept.size };
  };

  /**
   * One step: this consumer's own unacknowledged entries first (a failed batch), then others' stale ones, then new
   * ones. `more`: another step may find work (not after a refused entry, which waits for the next drain).
   */
  const step = async (): Promise<{ readonly done: number; readonly more: boolean }> => {
    await ensureGroup();
    const own = firstStreamOf(await redis(client.xreadgroup("GROUP", group, consumer, "COUNT", options.batchSize, "STREAMS", stream, "0"), "pending"));
    if (own.length > 0) {
      const { done, kept } = await write(own);
      return { done, more: kept === 0 };
    }
    // Redis 7: [next cursor, entries (nil for one deleted meanwhile), ids of the deleted].
    const [nextId, entries, deleted] = (await redis(client.xautoclaim(stream, group, consumer, options.claimIdleMs, claimCursor, "COUNT", options.batchSize), "claim")) as [string, Array<RawStreamEntry | null>, string[] | undefined];
    claimCursor = String(nextId);
    const taken = messagesOf(entries);
    const deletedCount = deleted?.length ?? 0;
    if (deletedCount > 0) {
      lost += deletedCount;
      options.onEvent({ type: "dropped", count: deletedCount, total: lost });
    }
    if (taken.length > 0) {
      options.onEvent({ type: "claimed", count: taken.length });
      const { done, kept } = await write(taken);
      return { done, more: kept === 0 };
    }
    const fresh = firstStreamOf(await redis(client.xreadgroup("GROUP", group, consumer, "COUNT", options.batchSize, "STREAMS", stream, ">"), "read"));
    const { done, kept } = await write(fresh);
    return { done, more: kept === 0 && fresh.length >= options.batchSize };
  };

  /** One drain, its failure reported (the entries stay pending in Redis) and backed off from, never thrown. */
  const attempt = async (): Promise<number> => {
    try {
      let total = 0;
      let n: { readonly done: number; readonly more: boolean };
      do {
        n = await step();
        total += n.done;
      } while (n.more && !closed);
      if (failing) options.onEvent({ type: "recovered" });
      failing = false;
      failures = 0;
      return total;
    } catch (error) {
      failing = true;
      groupReady = false;
      options.onEvent({ type: "failed", cause: causeOf(error), waiting: -1 });
      failures++;
      return 0;
    }
  };

  const run = () => (running ??= attempt().finally(() => (running = undefined)));

  const tick = () => {
    timer = undefined;
    if (closed) return;
    void run().finally(() => {
      if (closed || timer) return;
      timer = setTimeout(tick, failing ? backoffDelay(failures, { baseMs: options.flushMs, maxMs: MAX_BACKOFF_MS }) : options.flushMs);
      timer.unref();
    });
  };
  timer = setTimeout(tick, options.flushMs);
  timer.unref();

  return {
    async drainNow() {
      await running;
      return run();
    },
    async close(graceMs) {
      closed = true;
      if (timer) clearTimeout(timer);
      timer = undefined;
      await settleWithin(running, graceMs);
    },
  };
}
