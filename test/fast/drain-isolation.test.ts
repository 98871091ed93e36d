import { describe, expect, it } from "vitest";
import type { WriterEvent } from "../../src/drain/batch-writer.js";
import { createIsolatingWriter, type DeadLetter } from "../../src/drain/isolate.js";
import { refusalCode } from "../../src/drain/refusal.js";
import { createRetryingBuffer } from "../../src/drain/retrying-buffer.js";

/** An error as the drivers throw them: a message and a SQLSTATE. */
const dbError = (code: string, message = "refused") => Object.assign(new Error(message), { code });

/** A table in memory whose "database" refuses any batch holding an item in `poison`, or every batch while `down`. */
function table(poison: ReadonlySet<string>) {
  const rows: string[] = [];
  const state = { down: false, calls: 0 };
  const write = async (batch: readonly string[]) => {
    state.calls++;
    if (state.down) throw new Error("connect ECONNREFUSED");
    const bad = batch.find((item) => poison.has(item));
    if (bad !== undefined) throw dbError("22P05", `unsupported Unicode escape sequence near ${bad}`);
    rows.push(...batch);
    return { written: batch.length, duplicates: 0 };
  };
  return { rows, state, write };
}

function sink() {
  const letters: DeadLetter[] = [];
  return { letters, deadLetter: async (more: readonly DeadLetter[]) => (letters.push(...more), new Set(more.map((l) => l.id))) };
}

describe("a writer that one bad record cannot stop", () => {
  it("blames only what the database says is the record's fault (SQLSTATE 22, 23, 54)", () => {
    expect(refusalCode(dbError("22P05"))).toBe("22P05");
    expect(refusalCode(dbError("23514"))).toBe("23514");
    expect(refusalCode(dbError("54000"))).toBe("54000");
    for (const outage of [dbError("57014"), dbError("08006"), dbError("42P01"), new Error("connect ECONNREFUSED"), undefined, "text"]) expect(refusalCode(outage)).toBeUndefined();
  });

  it("writes the good records of a refused batch one by one, keeps the bad one for the next tries, then dead-letters it", async () => {
    const t = table(new Set(["b"]));
    const dead = sink();
    const write = createIsolatingWriter(t.write, { idOf: (s) => s, payloadOf: (s) => JSON.stringify({ s }), maxTries: 3, deadLetter: dead.deadLetter });
    expect(await write(["a", "b", "c"])).toEqual({ written: 2, duplicates: 0, kept: ["b"], deadLettered: [] });
    expect(t.rows).toEqual(["a", "c"]);
    expect(await write(["b", "d"])).toMatchObject({ written: 1, kept: ["b"] });
    const third = await write(["b"]);
    expect(third).toMatchObject({ written: 0, kept: [], deadLettered: [{ id: "b", code: "22P05", payload: '{"s":"b"}' }] });
    expect(dead.letters.map((l) => l.id)).toEqual(["b"]);
    expect(t.rows).toEqual(["a", "c", "d"]);
  });

  it("blames nobody in an outage: the batch waits whole", async () => {
    const t = table(new Set());
    const dead = sink();
    const write = createIsolatingWriter(t.write, { idOf: (s) => s, payloadOf: (s) => s, maxTries: 1, deadLetter: dead.deadLetter });
    t.state.down = true;
    await expect(write(["a", "b"])).rejects.toThrow(/ECONNREFUSED/);
    expect(t.state.calls).toBe(1);
    expect(dead.letters).toEqual([]);
  });

  it("in a retrying buffer: records behind a refused one are written at once, and the refused one goes after its tries", async () => {
    const t = table(new Set(["poison"]));
    const dead = sink();
    const events: WriterEvent[] = [];
    const buffer = createRetryingBuffer<string>({
      maxBuffered: 100,
      batchSize: 3,
      flushMs: 60_000,
      write: t.write,
      isolation: { idOf: (s) => s, payloadOf: (s) => s, maxTries: 5, deadLetter: dead.deadLetter },
      onEvent: (e) => events.push(e),
    });
    for (const item of ["r1", "poison", "r2", "r3", "r4"]) buffer.add(item);
    await buffer.flush();
    expect(t.rows).toEqual(["r1", "r2"]);
    for (let i = 0; i < 5; i++) await buffer.flush();
    expect(t.rows).toEqual(["r1", "r2", "r3", "r4"]);
    expect(buffer.waiting).toBe(0);
    expect(events.filter((e) => e.type === "refused")).toHaveLength(4);
    expect(events.filter((e) => e.type === "dead_lettered")).toEqual([{ type: "dead_lettered", letters: [{ id: "poison", code: "22P05" }] }]);
    // Refusals are not an outage: no failure was reported, no backoff taken.
    expect(events.some((e) => e.type === "failed")).toBe(false);
    await buffer.close(100);
  });
});
