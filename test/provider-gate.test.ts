import { describe, expect, it } from "vitest";
import { createProviderGate, createProviderGates } from "../src/admission/provider-gate.js";

const admission = (maxConcurrent: number, maxWaiting = 10) => ({ maxConcurrent, maxWaiting, timeoutMs: 600_000 });
const signal = new AbortController().signal;

describe("a provider gate given new settings by a reload", () => {
  it("a raised maxConcurrent admits waiters at once; slots taken before it release into the same count", async () => {
    const gate = createProviderGate("p", admission(1));
    const held = await gate.acquire(signal);
    const waiting = gate.acquire(signal);
    expect(gate.waiting).toBe(1);
    gate.configure(admission(2));
    const admitted = await waiting;
    expect({ inFlight: gate.inFlight, waiting: gate.waiting }).toEqual({ inFlight: 2, waiting: 0 });
    const third = gate.acquire(signal);
    expect(gate.waiting).toBe(1); // 2 of 2 in flight
    held();
    held(); // a second release of the same slot does nothing
    const last = await third;
    admitted();
    last();
    expect({ inFlight: gate.inFlight, waiting: gate.waiting }).toEqual({ inFlight: 0, waiting: 0 });
  });

  it("a lowered maxConcurrent admits nobody until enough streams have ended", async () => {
    const gate = createProviderGate("p", admission(2));
    const a = await gate.acquire(signal);
    const b = await gate.acquire(signal);
    gate.configure(admission(1));
    const waiting = gate.acquire(signal);
    a();
    expect({ inFlight: gate.inFlight, waiting: gate.waiting }).toEqual({ inFlight: 1, waiting: 1 });
    b();
    const c = await waiting;
    expect(gate.inFlight).toBe(1);
    c();
    expect(gate.inFlight).toBe(0);
  });

  it("a lowered maxWaiting sheds newcomers, naming the new limit, and keeps who already waits", async () => {
    const gate = createProviderGate("p", admission(1, 5));
    const held = await gate.acquire(signal);
    const first = gate.acquire(signal);
    gate.configure(admission(2, 0));
    const admitted = await first;
    await expect(gate.acquire(signal)).rejects.toThrow(/at its limit of 2 streams and its queue is full/);
    held();
    admitted();
    expect(gate.inFlight).toBe(0);
  });

  it("the set reconfigures gates by provider name, and a gate made later by a request on the old configuration gets the new settings", async () => {
    const gates = createProviderGates();
    const old = { name: "p", admission: admission(1, 0) };
    gates.configure(new Map([["p", old]]));
    const gate = gates.gateFor(old);
    const held = await gate.acquire(signal);
    gates.configure(
      new Map([
        ["p", { admission: admission(2, 0) }],
        ["q", { admission: admission(1, 0) }],
      ]),
    );
    expect(gates.gateFor(old)).toBe(gate); // kept, with its count
    const second = await gate.acquire(signal);
    await expect(gate.acquire(signal)).rejects.toThrow(/limit of 2 streams/);
    const q = gates.gateFor({ name: "q", admission: admission(50, 0) });
    const onlyOne = await q.acquire(signal);
    await expect(q.acquire(signal)).rejects.toThrow(/limit of 1 streams/);
    for (const release of [held, second, onlyOne]) release();
    expect(gate.inFlight + q.inFlight).toBe(0);
  });
});

describe("background calls at a provider gate (batch lines)", () => {
  const share = (maxConcurrent: number, backgroundShare: number) => ({ ...admission(maxConcurrent), backgroundShare });

  it("take at most their share of maxConcurrent, at least one slot, and wait for more without a queue limit", async () => {
    const gate = createProviderGate("p", share(8, 0.25));
    const first = await gate.acquire(signal, "background");
    const second = await gate.acquire(signal, "background");
    const third = gate.acquire(signal, "background");
    expect({ inFlight: gate.inFlight, background: gate.backgroundInFlight, waiting: gate.backgroundWaiting }).toEqual({ inFlight: 2, background: 2, waiting: 1 });
    // Interactive calls still have the rest.
    const interactive = await Promise.all(Array.from({ length: 6 }, () => gate.acquire(signal)));
    expect(gate.inFlight).toBe(8);
    first();
    const admitted = await third;
    expect(gate.backgroundInFlight).toBe(2);
    for (const release of [second, admitted, ...interactive]) release();
    expect({ inFlight: gate.inFlight, background: gate.backgroundInFlight }).toEqual({ inFlight: 0, background: 0 });

    const tiny = createProviderGate("q", share(2, 0.1));
    const only = await tiny.acquire(signal, "background");
    const next = tiny.acquire(signal, "background");
    expect(tiny.backgroundWaiting).toBe(1);
    only();
    (await next)();
  });

  it("start only while no interactive call waits, and a freed slot goes to an interactive waiter first", async () => {
    const gate = createProviderGate("p", share(2, 1));
    const a = await gate.acquire(signal);
    const b = await gate.acquire(signal);
    const interactive = gate.acquire(signal);
    const batch = gate.acquire(signal, "background");
    a();
    const admittedInteractive = await interactive;
    expect({ waiting: gate.waiting, backgroundWaiting: gate.backgroundWaiting, background: gate.backgroundInFlight }).toEqual({ waiting: 0, backgroundWaiting: 1, background: 0 });
    b();
    const admittedBatch = await batch;
    expect(gate.backgroundInFlight).toBe(1);
    // With an interactive call waiting, a new background call does not jump in when a slot frees.
    const late = gate.acquire(signal);
    const blocked = gate.acquire(signal, "background");
    admittedInteractive();
    const lateAdmitted = await late;
    expect(gate.backgroundWaiting).toBe(1);
    admittedBatch();
    (await blocked)();
    lateAdmitted();
    expect(gate.inFlight).toBe(0);
  });

  it("take a share raised by a reload at once, and a lowered one as their streams end", async () => {
    const gate = createProviderGate("p", share(8, 0.125));
    const first = await gate.acquire(signal, "background");
    const second = gate.acquire(signal, "background");
    expect(gate.backgroundWaiting).toBe(1);
    gate.configure(share(8, 0.25));
    const admitted = await second;
    expect(gate.backgroundInFlight).toBe(2);
    gate.configure(share(8, 0.125));
    const third = gate.acquire(signal, "background");
    first();
    expect(gate.backgroundWaiting).toBe(1); // one still in flight: the lowered share is full
    admitted();
    (await third)();
    expect(gate.inFlight).toBe(0);
  });

  it("leave the queue when their line is cancelled, and fail with the gate when it closes", async () => {
    const gate = createProviderGate("p", share(1, 1));
    const held = await gate.acquire(signal);
    const controller = new AbortController();
    const cancelled = gate.acquire(controller.signal, "background");
    const closed = gate.acquire(signal, "background");
    controller.abort(new Error("line cancelled"));
    await expect(cancelled).rejects.toThrow("line cancelled");
    expect(gate.backgroundWaiting).toBe(1);
    gate.close(new Error("shutting down") as never);
    await expect(closed).rejects.toThrow("shutting down");
    held();
    expect(gate.inFlight).toBe(0);
  });
});
