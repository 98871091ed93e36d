import { beforeEach, describe, expect, it } from "vitest";
import { createMemoryResponseStore } from "../../src/response-state/memory-response-store.js";
import { describeResponseStore, LONG_TTL_MS, owner, type StoreFixture, storedRecord } from "../helpers/response-store-contract.js";

/** The in-memory store the fast tier gives the Responses edge: the same contract as the database's, on a clock the test moves. */
let current: StoreFixture;
beforeEach(() => {
  let now = 1_780_000_000_000;
  let quota = 0;
  current = {
    store: createMemoryResponseStore({ maxStoredBytes: () => quota, now: () => now }),
    setQuota: (bytes) => {
      quota = bytes;
    },
    elapse: async (ms) => {
      now += ms;
    },
  };
});

describeResponseStore("in memory", () => current);

describe("in memory, bounded in all", () => {
  it("drops the oldest records first once maxTotalBytes is passed, whoever owns them, and keeps the newest", async () => {
    const probe = createMemoryResponseStore({ maxStoredBytes: 0 });
    const a = owner();
    await probe.put(storedRecord(a), LONG_TTL_MS);
    const one = (await probe.summaries(a))[0]!.bytes;
    const store = createMemoryResponseStore({ maxStoredBytes: 0, maxTotalBytes: one * 3 });
    const records = Array.from({ length: 5 }, (_, i) => storedRecord(i % 2 === 0 ? a : owner()));
    for (const r of records) await store.put(r, LONG_TTL_MS);
    const kept = await Promise.all(records.map((r) => store.get(r.id, r.owner)));
    expect(kept.map((r) => r !== undefined)).toEqual([false, false, true, true, true]);
    expect((await store.summaries()).reduce((n, s) => n + s.bytes, 0)).toBeLessThanOrEqual(one * 3);
  });
});
