import { describe, expect, it } from "vitest";
import { createMemoryReplayStore } from "../src/store/memory-replay-store.js";
import type { ReplayEntry } from "../src/store/replay-store.js";

const entry = (text = "thinking", provider = "p"): ReplayEntry => ({
  provider,
  model: "m",
  reasoning: [{ type: "reasoning", text, signature: "sig" }],
  toolSignatures: {},
});

describe("in-process replay store", () => {
  it("finds a turn by any of its tool-call ids, and nothing by other keys", async () => {
    const store = createMemoryReplayStore();
    const turn = entry();
    await store.put(["call_a", "call_b"], turn);
    expect(await store.get("call_a")).toBe(turn);
    expect(await store.get("call_b")).toBe(turn);
    expect(await store.get("call_")).toBeUndefined();
    expect(await store.get("")).toBeUndefined();
    expect(store.size).toBe(1);
  });

  it("forgets a turn after its TTL (injected clock)", async () => {
    let now = 1_000;
    const store = createMemoryReplayStore({ maxEntries: 10, maxBytes: 1 << 20, ttlMs: 500, now: () => now });
    await store.put(["a"], entry());
    now += 499;
    expect(await store.get("a")).toBeDefined();
    now += 1;
    expect(await store.get("a")).toBeUndefined();
    expect(store.size).toBe(0);
  });

  it("holds at most maxEntries turns, dropping the oldest first", async () => {
    const store = createMemoryReplayStore({ maxEntries: 3, maxBytes: 1 << 20, ttlMs: 60_000 });
    for (let i = 0; i < 5; i++) await store.put([`id${i}`], entry(`t${i}`));
    expect(store.size).toBe(3);
    expect(await store.get("id0")).toBeUndefined();
    expect(await store.get("id1")).toBeUndefined();
    expect((await store.get("id4"))?.reasoning[0]?.text).toBe("t4");
  });

  it("stays within maxBytes however large the turns, and refuses one turn larger than a tenth of it", async () => {
    const store = createMemoryReplayStore({ maxEntries: 1_000, maxBytes: 200_000, ttlMs: 60_000 });
    for (let i = 0; i < 100; i++) await store.put([`id${i}`], entry("x".repeat(5_000)));
    expect(store.bytes).toBeLessThanOrEqual(200_000);
    expect(store.size).toBeGreaterThan(5);
    await store.put(["huge"], entry("x".repeat(20_000)));
    expect(await store.get("huge")).toBeUndefined();
  });

  it("never keys on an over-long id", async () => {
    const store = createMemoryReplayStore();
    await store.put(["x".repeat(257)], entry());
    expect(store.size).toBe(0);
  });

  it("a turn stored again under a reused id replaces the old one", async () => {
    const store = createMemoryReplayStore();
    await store.put(["a", "b"], entry("old"));
    await store.put(["b"], entry("new"));
    expect(await store.get("a")).toBeUndefined();
    expect((await store.get("b"))?.reasoning[0]?.text).toBe("new");
    expect(store.size).toBe(1);
  });
});
