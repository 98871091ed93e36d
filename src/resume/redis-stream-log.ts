import type { SluiceRedisClient } from "../store/redis-connection.js";
import { firstStreamOf, messagesOf, type RawStreamEntry } from "../store/redis-replies.js";
import { openBatch, sealBatch, streamSlot } from "./sealed-batches.js";
import { type ControlOp, decodeBatch, isTerminal, type LogEntry, notFound, type StreamLog, type StreamMeta } from "./stream-log.js";

function parseControl(message: string): { id: string; op: ControlOp } | undefined {
  try {
    const { id, op } = JSON.parse(message) as { id?: unknown; op?: unknown };
    return typeof id === "string" && (op === "attach" || op === "detach" || op === "cancel") ? { id, op } : undefined;
  } catch {
    return undefined;
  }
}

export interface RedisStreamLogOptions {
  /** Commands; fails at once while disconnected (no offline queue). */
  readonly client: SluiceRedisClient;
  /** store.redis.prefix: every key and the control channel live under it. */
  readonly prefix: string;
  readonly retentionMs: number;
  /** The stream's XADD MAXLEN (in batches, each at least one message): a guard past the backlog bound the writer enforces itself. */
  readonly maxEntries: number;
  /** Told when the control channel's connection fails (it reconnects on its own). */
  readonly onError?: (error: unknown) => void;
  /** Told each time the control channel is (re)subscribed: replicas hear each other from then on. */
  readonly onSubscribed?: () => void;
}

/** Entries fetched per round trip while replaying. */
const PAGE = 512;

/**
 * One Redis Stream entry holds a batch of consecutive messages (field `r`,
 * a JSON array); its id is `0-(last sequence + 1)`, so ids rise with the
 * sequence and never collide.
 */
const entryId = (sequence: number) => `0-${sequence + 1}`;

/**
 * Resumable streams in Redis Streams, shared by every replica on the same
 * store.redis: `{prefix}resume:{id}:log` (XADD of message batches with explicit ids, MAXLEN,
 * PEXPIRE refreshed as it grows) and `{prefix}resume:{id}:meta`, `{id}` being
 * the id's digest and each batch sealed under the id (sealed-batches.ts). Replays
 * page with XRANGE on the shared connection; waiting for live entries
 * takes an XREAD BLOCK connection of its own per reader (a blocking command
 * would stall everyone else's). Control messages (attach, detach, cancel)
 * go over one pub/sub channel.
 */
export function createRedisStreamLog(options: RedisStreamLogOptions): StreamLog {
  const { client, prefix, retentionMs } = options;
  const logKey = (id: string) => `${prefix}resume:{${streamSlot(id)}}:log`;
  const metaKey = (id: string) => `${prefix}resume:{${streamSlot(id)}}:meta`;
  const channel = `${prefix}resume:control`;
  /** When each open stream's expiry was last pushed back: refreshed every quarter retention, not on every append. */
  const refreshed = new Map<string, number>();
  const blockMs = Math.max(50, Math.min(5_000, Math.floor(retentionMs / 2)));

  const listeners = new Set<(id: string, op: ControlOp) => void>();
  // A connection in subscriber mode runs no other command: the channel has one of its own.
  const subscriber = client.duplicate();
  subscriber.on("error", (error: unknown) => options.onError?.(error));
  subscriber.on("message", (from: string, message: string) => {
    if (from !== channel) return;
    // Anyone with access to Redis can publish here: a malformed message is ignored, never thrown inside the client.
    const control = parseControl(message);
    if (control) for (const listener of listeners) listener(control.id, control.op);
  });
  const subscribed = subscriber
    .connect()
    .then(() => subscriber.subscribe(channel))
    .then(() => {
      options.onSubscribed?.();
      // ioredis subscribes again by itself after a reconnection, but reports ready before Redis confirms: asking again (harmless) waits for that.
      subscriber.on(
        "ready",
        () =>
          void subscriber.subscribe(channel).then(
            () => options.onSubscribed?.(),
            (error: unknown) => options.onError?.(error),
          ),
      );
    })
    .catch((error: unknown) => options.onError?.(error));

  const expire = (id: string) => Promise.all([client.pexpire(logKey(id), retentionMs), client.pexpire(metaKey(id), retentionMs)]);

  /** Waits for entries after `last` on a connection of its own; aborting destroys it, which ends the wait. */
  async function* live(id: string, last: string, signal: AbortSignal): AsyncGenerator<LogEntry, void, undefined> {
    const reader = client.duplicate();
    reader.on("error", () => undefined);
    const onAbort = () => reader.disconnect();
    signal.addEventListener("abort", onAbort, { once: true });
    try {
      await reader.connect();
      for (;;) {
        signal.throwIfAborted();
        const messages = firstStreamOf(await reader.xread("COUNT", PAGE, "BLOCK", blockMs, "STREAMS", logKey(id), last));
        if (messages.length === 0) {
          if ((await client.exists(metaKey(id))) === 0) throw notFound(id);
          continue;
        }
        for (const message of messages) {
          last = message.id;
          for (const entry of decodeBatch(message.message.r === undefined ? "[]" : openBatch(message.message.r, id))) {
            yield entry;
            if (isTerminal(entry.record)) return;
          }
        }
      }
    } catch (error) {
      signal.throwIfAborted();
      throw error;
    } finally {
      signal.removeEventListener("abort", onAbort);
      reader.disconnect();
    }
  }

  return {
    async open(id, meta) {
      refreshed.set(id, Date.now());
      await client.set(metaKey(id), JSON.stringify(meta), "PX", retentionMs);
    },
    append(id, entries, encoded) {
      const lastEntry = entries.at(-1);
      if (!lastEntry) return Promise.resolve();
      const added = client.xadd(logKey(id), "MAXLEN", options.maxEntries, entryId(lastEntry.sequence), "r", sealBatch(encoded, id));
      const terminal = isTerminal(lastEntry.record);
      const at = refreshed.get(id);
      if (terminal || at === undefined || Date.now() - at > retentionMs / 4) {
        if (terminal) refreshed.delete(id);
        else refreshed.set(id, Date.now());
        return Promise.all([added, expire(id)]).then(() => undefined);
      }
      return added.then(() => undefined);
    },
    async meta(id) {
      const text = await client.get(metaKey(id));
      return text === null ? undefined : (JSON.parse(text) as StreamMeta);
    },
    async *read(id, signal) {
      let last = "0-0";
      for (;;) {
        const page = messagesOf((await client.xrange(logKey(id), last === "0-0" ? "-" : `(${last}`, "+", "COUNT", PAGE)) as RawStreamEntry[]);
        for (const message of page) {
          last = message.id;
          for (const entry of decodeBatch(message.message.r === undefined ? "[]" : openBatch(message.message.r, id))) {
            yield entry;
            if (isTerminal(entry.record)) return;
          }
        }
        if (page.length < PAGE) break;
      }
      if (last === "0-0" && (await client.exists(metaKey(id))) === 0) throw notFound(id);
      yield* live(id, last, signal);
    },
    async publish(id, op) {
      await client.publish(channel, JSON.stringify({ id, op }));
    },
    subscribe(listener) {
      listeners.add(listener);
      return () => listeners.delete(listener);
    },
    async close() {
      listeners.clear();
      // Not awaiting the subscription: while Redis is away its connect never settles, and close must not wait for Redis.
      subscriber.disconnect();
      void subscribed;
    },
  };
}
