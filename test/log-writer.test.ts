import { describe, expect, it } from "vitest";
import { BACKLOG_EXCEEDED, createLogWriter, STORE_FAILED } from "../src/resume/log-writer.js";
import { createMemoryStreamLog } from "../src/resume/memory-stream-log.js";
import { decodeBatch, type LogEntry, type StreamLog } from "../src/resume/stream-log.js";

const text = (sequence: number): LogEntry => ({ sequence, record: { kind: "delta", delta: { type: "text", text: `t${sequence}` } } });

/** A log whose appends complete when the test says so. */
function manualLog() {
  const calls: Array<{ entries: readonly LogEntry[]; encoded: string; done: () => void; fail: (e: unknown) => void }> = [];
  const log = {
    append: (_id: string, entries: readonly LogEntry[], encoded: string) =>
      new Promise<void>((done, fail) => {
        calls.push({ entries, encoded, done, fail });
      }),
  } as unknown as StreamLog;
  return { log, calls };
}

const bounds = { maxBacklogMessages: 1_000, maxBacklogBytes: 1_000_000 };

describe("the log writer", () => {
  it("stores the first message at once and what arrives during that append as one batch, in order", async () => {
    const { log, calls } = manualLog();
    const writer = createLogWriter(log, "s", bounds, () => undefined);
    writer.write(text(0));
    writer.write(text(1));
    writer.write(text(2));
    expect(calls.map((c) => c.entries.map((e) => e.sequence))).toEqual([[0]]);
    calls[0]!.done();
    await new Promise((resolve) => setImmediate(resolve));
    expect(calls.map((c) => c.entries.map((e) => e.sequence))).toEqual([[0], [1, 2]]);
    expect(decodeBatch(calls[1]!.encoded)).toEqual([text(1), text(2)]);
    const flushed = writer.flushed();
    calls[1]!.done();
    await flushed;
  });

  it("stops storing when the store fails, and says so once", async () => {
    const { log, calls } = manualLog();
    const stops: string[] = [];
    const writer = createLogWriter(log, "s", bounds, (reason) => stops.push(reason));
    writer.write(text(0));
    calls[0]!.fail(new Error("down"));
    await writer.flushed();
    expect(writer.storing).toBe(false);
    expect(writer.write(text(1))).toBeUndefined();
    expect(calls).toHaveLength(1);
    expect(stops).toEqual([STORE_FAILED]);
  });

  it("puts a truncated record in the last slot past the message bound, or past the byte bound", async () => {
    for (const limits of [
      { maxBacklogMessages: 4, maxBacklogBytes: 1_000_000 },
      { maxBacklogMessages: 1_000, maxBacklogBytes: 200 },
    ]) {
      const log = createMemoryStreamLog({ retentionMs: 60_000 });
      await log.open("s", { owner: "" });
      const stops: string[] = [];
      const writer = createLogWriter(log, "s", limits, (reason) => stops.push(reason));
      for (let i = 0; i < 10; i++) writer.write(text(i));
      await writer.flushed();
      const stored: LogEntry[] = [];
      for await (const e of log.read("s", new AbortController().signal)) stored.push(e);
      expect(stored.at(-1)!.record).toEqual({ kind: "truncated" });
      expect(stored.map((e) => e.sequence)).toEqual(stored.map((_, i) => i));
      expect(stops).toEqual([BACKLOG_EXCEEDED]);
      await log.close();
    }
  });

  it("makes its caller wait while the store falls far behind", async () => {
    const { log, calls } = manualLog();
    const writer = createLogWriter(log, "s", bounds, () => undefined);
    const waits = Array.from({ length: 300 }, (_, i) => writer.write(text(i)));
    expect(waits.slice(0, 256).every((w) => w === undefined)).toBe(true);
    expect(waits.at(-1)).toBeInstanceOf(Promise);
    calls[0]!.done();
    await new Promise((resolve) => setImmediate(resolve));
    calls[1]!.done();
    await waits.at(-1);
  });
});
