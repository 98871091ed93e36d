import type { Database } from "../db/database.js";
import type { SluiceRedisClient } from "../store/redis-tenant-store.js";
import { within } from "../store/within.js";
import { insertRows, rowOfEntry } from "./ledger-rows.js";
import { type LedgerEvent, MAX_BACKOFF_MS } from "./ledger-events.js";

export interface StreamDrainOptions {
  readonly client: SluiceRedisClient;
  /** The usage stream (`<prefix>usage`). */
  readonly stream: string;
  readonly group: string;
  /** This replica's name in the group. */
  readonly consumer: string;
  readonly database: () => Promise<Database>;
  readonly batchSize: number;
  readonly flushMs: number;
  /** Entries another consumer read but has not acknowledged for this long are taken over (it died mid-batch). */
  readonly claimIdleMs: number;
  /** Bound on every Redis command. */
  readonly timeoutMs: number;
  readonly onEvent: (event: LedgerEvent) => void;
}

export interface StreamDrain {
  /** Drains until nothing new is there (tests and shutdown); resolves with the entries written or found written (0 after a failure, which is reported, not thrown). */
  drainNow(): Promise<number>;
  close(graceMs: number): Promise<void>;
}

interface Entry {
  readonly id: string;
  readonly message: Record<string, string>;
}

/**
 * The ledger's writer when replicas share Redis: every settle already
 * appends its record to the usage stream, and every replica reads that
 * stream as one consumer of one group, so each entry goes to one replica,
 * is written to the database, and only then acknowledged. Nothing is lost
 * to a database outage (entries stay pending in Redis, bounded by the
 * stream's cap) or to a replica killed mid-batch (its pending entries are
 * claimed by another after `claimIdleMs`); rows are keyed by the record's
 * id, so an entry written twice is one row. Reads do not block: the
 * connection is the tenant store's, and a blocking read would hold it.
 */
export function createStreamDrain(options: StreamDrainOptions): StreamDrain {
  const { client, stream, group, consumer } = options;
  let timer: NodeJS.Timeout | undefined;
  let running: Promise<number> | undefined;
  let closed = false;
  let groupReady = false;
  let failing = false;
  let backoffMs = options.flushMs;
  let claimCursor = "0-0";
  let lost = 0;
  const redis = <T>(work: Promise<T>, operation: string) => within(work, options.timeoutMs, operation);

  const ensureGroup = async () => {
    if (groupReady) return;
    try {
      // From the start of the stream: records settled before the first replica ran the ledger are written too.
      await redis(client.xGroupCreate(stream, group, "0", { MKSTREAM: true }), "ledger group");
    } catch (error) {
      if (!(error instanceof Error && error.message.includes("BUSYGROUP"))) throw error;
    }
    groupReady = true;
  };

  const entriesOf = (reply: unknown): Entry[] => {
    const streams = reply as Array<{ messages: Array<{ id: string; message: Record<string, string> } | null> }> | null;
    return (streams?.[0]?.messages ?? []).filter((m): m is Entry => m !== null);
  };

  /** Writes then acknowledges one batch; resolves with its size. */
  const write = async (entries: readonly Entry[]): Promise<number> => {
    if (entries.length === 0) return 0;
    const db = await options.database();
    const written = await insertRows(
      db,
      entries.map((e) => rowOfEntry(e.message, e.id)),
    );
    await redis(
      client.xAck(
        stream,
        group,
        entries.map((e) => e.id),
      ),
      "ledger ack",
    );
    options.onEvent({ type: "written", written, duplicates: entries.length - written });
    return entries.length;
  };

  /** One step: this consumer's own unacknowledged entries first (a failed batch), then others' stale ones, then new ones. */
  const step = async (): Promise<number> => {
    await ensureGroup();
    const own = entriesOf(await redis(client.xReadGroup(group, consumer, { key: stream, id: "0" }, { COUNT: options.batchSize }), "ledger pending"));
    if (own.length > 0) return write(own);
    const claimed = await redis(client.xAutoClaim(stream, group, consumer, options.claimIdleMs, claimCursor, { COUNT: options.batchSize }), "ledger claim");
    claimCursor = String(claimed.nextId);
    const taken = claimed.messages.filter((m): m is Entry => m !== null);
    if (claimed.deletedMessages.length > 0) {
      lost += claimed.deletedMessages.length;
      options.onEvent({ type: "dropped", count: claimed.deletedMessages.length, total: lost });
    }
    if (taken.length > 0) {
      options.onEvent({ type: "claimed", count: taken.length });
      return write(taken);
    }
    return write(entriesOf(await redis(client.xReadGroup(group, consumer, { key: stream, id: ">" }, { COUNT: options.batchSize }), "ledger read")));
  };

  const drain = async (): Promise<number> => {
    let total = 0;
    for (;;) {
      const n = await step();
      total += n;
      if (n < options.batchSize || closed) return total;
    }
  };

  /** One drain, its failure reported (the entries stay pending in Redis) and backed off from, never thrown. */
  const attempt = (): Promise<number> =>
    drain().then(
      (n) => {
        if (failing) options.onEvent({ type: "recovered", waiting: 0 });
        failing = false;
        backoffMs = options.flushMs;
        return n;
      },
      (error: unknown) => {
        failing = true;
        groupReady = false;
        options.onEvent({ type: "failed", cause: error instanceof Error ? error.message.slice(0, 200) : "unknown", waiting: -1 });
        backoffMs = Math.min(MAX_BACKOFF_MS, backoffMs * 2);
        return 0;
      },
    );

  const tick = () => {
    timer = undefined;
    if (closed) return;
    running ??= attempt().finally(() => {
      running = undefined;
      if (!closed) {
        timer = setTimeout(tick, failing ? backoffMs : options.flushMs);
        timer.unref();
      }
    });
  };
  timer = setTimeout(tick, options.flushMs);
  timer.unref();

  return {
    async drainNow() {
      await running;
      return attempt();
    },
    async close(graceMs) {
      closed = true;
      if (timer) clearTimeout(timer);
      timer = undefined;
      let deadline: NodeJS.Timeout | undefined;
      const late = new Promise<void>((resolve) => (deadline = setTimeout(resolve, graceMs)));
      await Promise.race([running?.catch(() => undefined), late]);
      clearTimeout(deadline);
    },
  };
}
