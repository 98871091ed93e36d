import { afterAll, describe, expect, it } from "vitest";
import type { Delta } from "../src/core/delta.js";
import { GatewayError } from "../src/core/errors.js";
import { createMemoryStreamLog } from "../src/resume/memory-stream-log.js";
import { createRedisStreamLog } from "../src/resume/redis-stream-log.js";
import { createResumableStreams, type Numbered } from "../src/resume/resumable-streams.js";
import { type ControlOp, encodeBatch, encodeEntry, type LogEntry, type StreamLog } from "../src/resume/stream-log.js";
import type { Principal } from "../src/tenancy/principal.js";
import { dropPrefix, startOwnRedis, storeClient, testPrefix } from "./helpers/redis.js";

const prefix = testPrefix("stream-log");
const clients: Array<Awaited<ReturnType<typeof storeClient>>> = [];
afterAll(async () => {
  for (const client of clients) client.disconnect();
  await dropPrefix(prefix);
});

const LOGS: Record<string, (retentionMs: number) => Promise<StreamLog>> = {
  "in process": async (retentionMs) => createMemoryStreamLog({ retentionMs }),
  redis: async (retentionMs) => {
    const client = await storeClient();
    clients.push(client);
    return createRedisStreamLog({ client, prefix: `${prefix}${retentionMs}:`, retentionMs, maxEntries: 1_000 });
  },
};

const id = (n: number) => `resp_${String(n).padStart(32, "0")}`;
const text = (t: string): Delta => ({ type: "text", text: t });
const entry = (sequence: number, delta: Delta): LogEntry => ({ sequence, record: { kind: "delta", delta } });
const append = (log: StreamLog, stream: string, ...entries: LogEntry[]) => log.append(stream, entries, encodeBatch(entries.map(encodeEntry)));

async function readAll(log: StreamLog, stream: string, signal = new AbortController().signal): Promise<LogEntry[]> {
  const out: LogEntry[] = [];
  for await (const e of log.read(stream, signal)) out.push(e);
  return out;
}

describe.each(Object.keys(LOGS))("the %s stream log", (name) => {
  const make = LOGS[name]!;

  it("replays what is stored, then hands on live entries until the terminal one", async () => {
    const log = await make(60_000);
    await log.open(id(1), { owner: "abc", includeUsage: true });
    expect(await log.meta(id(1))).toEqual({ owner: "abc", includeUsage: true });
    await append(log, id(1), entry(0, { type: "start", responseId: id(1), provider: "p", model: "m" }));
    await append(log, id(1), entry(1, text("a")));
    const reading = readAll(log, id(1));
    // Not awaited one by one: the log keeps them in call order; a batch of several is one append.
    void append(log, id(1), entry(2, text("b")), entry(3, text("c")));
    void append(log, id(1), entry(4, { type: "finish", reason: "stop" }));
    const entries = await reading;
    expect(entries.map((e) => e.sequence)).toEqual([0, 1, 2, 3, 4]);
    expect(entries[2]!.record).toEqual({ kind: "delta", delta: text("b") });
    await log.close();
  });

  it("ends a reader at a failed or truncated record", async () => {
    const log = await make(60_000);
    await log.open(id(2), { owner: "" });
    await append(log, id(2), entry(0, text("a")));
    await append(log, id(2), { sequence: 1, record: { kind: "failed", code: "upstream_unavailable", message: "gone" } });
    expect((await readAll(log, id(2))).at(-1)!.record).toEqual({ kind: "failed", code: "upstream_unavailable", message: "gone" });
    await log.open(id(3), { owner: "" });
    await append(log, id(3), { sequence: 0, record: { kind: "truncated" } });
    expect(await readAll(log, id(3))).toHaveLength(1);
    await log.close();
  });

  it("answers not_found for an unknown stream and, once its retention has passed, for a stream it held", async () => {
    const log = await make(1_000);
    await expect(readAll(log, id(4))).rejects.toMatchObject({ code: "not_found" });
    expect(await log.meta(id(4))).toBeUndefined();
    await log.open(id(5), { owner: "" });
    await append(log, id(5), entry(0, text("a")));
    // A reader waiting for more learns of the expiry itself: nothing here waits on the clock.
    const reading = readAll(log, id(5));
    await expect(reading).rejects.toMatchObject({ code: "not_found", message: expect.stringContaining(id(5)) });
    expect(await log.meta(id(5))).toBeUndefined();
    await log.close();
  });

  it("stops a waiting reader when its signal aborts", async () => {
    const log = await make(60_000);
    await log.open(id(6), { owner: "" });
    const abort = new AbortController();
    const reading = readAll(log, id(6), abort.signal);
    abort.abort(new GatewayError("canceled", "reader left"));
    await expect(reading).rejects.toMatchObject({ code: "canceled" });
    await log.close();
  });

  it("delivers control messages to every subscriber", async () => {
    const log = await make(60_000);
    const heard: Array<[string, ControlOp]> = [];
    const done = new Promise<void>((resolve) => {
      log.subscribe((stream, op) => {
        heard.push([stream, op]);
        if (op === "cancel") resolve();
      });
    });
    // The Redis subscriber connects in the background: publish until it hears.
    for (let i = 0; heard.length === 0 && i < 200; i++) {
      await log.publish(id(7), "cancel");
      await Promise.race([done, new Promise((resolve) => setTimeout(resolve, 25))]);
    }
    expect(heard[0]).toEqual([id(7), "cancel"]);
    await log.close();
  });
});

const SETTINGS = { detachGraceMs: 60_000, retentionMs: 60_000, maxBacklogMessages: 16, maxBacklogBytes: 1_000_000, maxReaders: 2 };
const owner = (sha256: string) => ({ name: sha256, id: sha256.slice(0, 12), sha256, source: "config", limits: {} }) as unknown as Principal;

/** A pipeline stand-in: start, `n` texts, finish; or stalls after `stallAfter` texts until its signal aborts. */
function fakePipeline(n: number, stallAfter?: number) {
  const seen: { signal?: AbortSignal; pulled: number } = { pulled: 0 };
  const start = async function* (signal: AbortSignal): AsyncGenerator<Delta, void, undefined> {
    seen.signal = signal;
    yield { type: "start", responseId: id(100 + n), provider: "p", model: "m" };
    for (let i = 0; i < n; i++) {
      if (i === stallAfter) {
        await new Promise((_, reject) => signal.addEventListener("abort", () => reject(signal.reason), { once: true }));
      }
      seen.pulled++;
      yield text(`t${i}`);
    }
    yield { type: "finish", reason: "stop" };
  };
  return { start, seen };
}

async function take(entries: AsyncGenerator<Numbered>, count: number): Promise<Numbered[]> {
  const out: Numbered[] = [];
  for await (const e of entries) {
    out.push(e);
    if (out.length === count) break;
  }
  return out;
}

describe("resumable streams over the in-process log", () => {
  it("pull the upstream only as fast as an attached client reads", async () => {
    const streams = createResumableStreams({ log: createMemoryStreamLog({ retentionMs: 60_000 }), settings: SETTINGS, storeTimeoutMs: 1_000 });
    const pipeline = fakePipeline(10);
    const client = new AbortController();
    const run = streams.run({ start: pipeline.start, clientSignal: client.signal });
    await run.next();
    await run.next();
    expect(pipeline.seen.pulled).toBe(1);
    await run.return();
    await streams.close();
  });

  it("keep pulling into the log after the client leaves, and give a reader every entry once", async () => {
    const streams = createResumableStreams({ log: createMemoryStreamLog({ retentionMs: 60_000 }), settings: SETTINGS, storeTimeoutMs: 1_000 });
    const pipeline = fakePipeline(8);
    const client = new AbortController();
    const got = await take(streams.run({ start: pipeline.start, clientSignal: client.signal }), 3);
    client.abort();
    const resumed = await streams.resume(id(108), undefined, new AbortController().signal);
    const all: Numbered[] = [];
    for await (const e of resumed.entries) all.push(e);
    expect(all.map((e) => e.sequence)).toEqual([...Array(10).keys()]);
    expect(all.slice(0, 3)).toEqual(got);
    expect(all.at(-1)!.delta.type).toBe("finish");
    await streams.close();
  });

  it("cancel the upstream when the grace passes with nobody reading", async () => {
    const streams = createResumableStreams({ log: createMemoryStreamLog({ retentionMs: 60_000 }), settings: { ...SETTINGS, detachGraceMs: 10 }, storeTimeoutMs: 1_000 });
    const pipeline = fakePipeline(5, 2);
    const client = new AbortController();
    await take(streams.run({ start: pipeline.start, clientSignal: client.signal }), 2);
    client.abort();
    const signal = pipeline.seen.signal!;
    if (!signal.aborted) await new Promise((resolve) => signal.addEventListener("abort", resolve, { once: true }));
    expect(signal.reason).toMatchObject({ code: "canceled", message: expect.stringContaining("detach grace") });
    await streams.close();
  });

  it("cancel at once, like any stream, when the client leaves before the stream has an id", async () => {
    const streams = createResumableStreams({ log: createMemoryStreamLog({ retentionMs: 60_000 }), settings: SETTINGS, storeTimeoutMs: 1_000 });
    let upstream: AbortSignal | undefined;
    // Still waiting for its first delta (admission, time to first token) when the client leaves.
    const start = async function* (signal: AbortSignal): AsyncGenerator<Delta, void, undefined> {
      upstream = signal;
      await new Promise((_, reject) => signal.addEventListener("abort", () => reject(signal.reason), { once: true }));
    };
    const client = new AbortController();
    const first = streams.run({ start, clientSignal: client.signal }).next();
    await new Promise((resolve) => setImmediate(resolve));
    client.abort();
    await expect(first).rejects.toMatchObject({ code: "canceled" });
    expect(upstream?.aborted).toBe(true);
    await streams.close();
  });

  it("stop storing past the backlog bound: the client is told, readers get not_resumable", async () => {
    const streams = createResumableStreams({ log: createMemoryStreamLog({ retentionMs: 60_000 }), settings: SETTINGS, storeTimeoutMs: 1_000 });
    const reasons: string[] = [];
    const all: Numbered[] = [];
    for await (const e of streams.run({ start: fakePipeline(30).start, clientSignal: new AbortController().signal, onNotResumable: (r) => reasons.push(r) })) all.push(e);
    expect(all).toHaveLength(32);
    expect(reasons).toHaveLength(1);
    const resumed = await streams.resume(id(130), undefined, new AbortController().signal);
    const read: Numbered[] = [];
    await expect(
      (async () => {
        for await (const e of resumed.entries) read.push(e);
      })(),
    ).rejects.toMatchObject({ code: "not_resumable" });
    expect(read).toHaveLength(SETTINGS.maxBacklogMessages - 1);
    await streams.close();
  });

  it("let only the owner's key resume or cancel; bound readers per replica", async () => {
    const streams = createResumableStreams({ log: createMemoryStreamLog({ retentionMs: 60_000 }), settings: SETTINGS, storeTimeoutMs: 1_000 });
    const client = new AbortController();
    await take(streams.run({ start: fakePipeline(4, 1).start, clientSignal: client.signal, principal: owner("aa") }), 2);
    await expect(streams.resume(id(104), owner("bb"), client.signal)).rejects.toMatchObject({ code: "permission_denied" });
    await expect(streams.cancel(id(104), owner("bb"))).rejects.toMatchObject({ code: "permission_denied" });
    const signal = new AbortController();
    const readers = await Promise.all([0, 1, 2].map(() => streams.resume(id(104), owner("aa"), signal.signal)));
    const firsts = await Promise.allSettled(readers.map((r) => r.entries.next()));
    expect(firsts.map((f) => f.status)).toEqual(["fulfilled", "fulfilled", "rejected"]);
    expect((firsts[2] as PromiseRejectedResult).reason).toMatchObject({ code: "overloaded" });
    await streams.cancel(id(104), owner("aa"));
    signal.abort();
    await streams.close();
  });
});

describe("the Redis stream log's control channel", () => {
  it("ignores a malformed control message from anyone with access to Redis", async () => {
    const client = await storeClient();
    clients.push(client);
    const channelPrefix = `${prefix}control:`;
    let subscribed!: () => void;
    const ready = new Promise<void>((resolve) => (subscribed = resolve));
    const log = createRedisStreamLog({ client, prefix: channelPrefix, retentionMs: 60_000, maxEntries: 100, onSubscribed: () => subscribed(), onError: () => undefined });
    const heard: string[] = [];
    const cancelled = new Promise<void>((resolve) =>
      log.subscribe((stream, op) => {
        heard.push(`${stream}:${op}`);
        if (op === "cancel") resolve();
      }),
    );
    await ready;
    await client.publish(`${channelPrefix}resume:control`, "{not json");
    await client.publish(`${channelPrefix}resume:control`, JSON.stringify({ id: 7, op: "cancel" }));
    await log.publish(id(1), "cancel");
    await cancelled; // published after the malformed ones, so heard after them
    expect(heard).toEqual([`${id(1)}:cancel`]);
    await log.close();
  });

  it("closes without waiting for a Redis that went away before it could subscribe", async () => {
    const own = await startOwnRedis();
    try {
      const client = await storeClient(own.url);
      clients.push(client);
      await own.kill();
      const log = createRedisStreamLog({ client, prefix: "sluice-test:stream-log-away:", retentionMs: 60_000, maxEntries: 100, onError: () => undefined });
      // Its subscriber now tries to connect for ever; close must not wait for it.
      await log.close();
    } finally {
      await own.kill();
    }
  });
});
