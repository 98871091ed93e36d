import { describe, expect, it } from "vitest";
import { createLeaseHeartbeat } from "../../src/tenancy/lease-heartbeat.js";
import { createManualTimers } from "../helpers/manual-timers.js";

/** A store whose heartbeats answer when the test says. */
function slowStore() {
  const calls: Array<{ ids: readonly string[]; answer: () => void }> = [];
  let inFlight = 0;
  let most = 0;
  return {
    calls,
    most: () => most,
    store: {
      heartbeat: (ids: readonly string[]) =>
        new Promise<void>((resolve) => {
          inFlight++;
          most = Math.max(most, inFlight);
          calls.push({
            ids,
            answer: () => {
              inFlight--;
              resolve();
            },
          });
        }),
    },
  };
}

const turn = () => new Promise((resolve) => setImmediate(resolve));

describe("the lease heartbeat", () => {
  it("renews the held streams every third of a lease, until each is dropped or reaches its bound", async () => {
    const timers = createManualTimers(0);
    const s = slowStore();
    const hb = createLeaseHeartbeat({ store: s.store, leaseMs: 3_000, timers });
    hb.hold("a", 10_000);
    hb.hold("b", 2_500);
    timers.advance(1_000);
    expect(s.calls.map((c) => c.ids)).toEqual([["a", "b"]]);
    s.calls[0]!.answer();
    await turn();
    timers.advance(1_000);
    s.calls[1]!.answer();
    await turn();
    // b's bound (2.5 s) has passed at the third beat: only a is renewed; a dropped stream is renewed no more.
    timers.advance(1_000);
    expect(s.calls[2]!.ids).toEqual(["a"]);
    s.calls[2]!.answer();
    await turn();
    hb.drop("a");
    timers.advance(1_000);
    // Still a beat (it sweeps the leases that ran out anywhere), with nothing to renew.
    expect(s.calls[3]!.ids).toEqual([]);
    hb.close();
  });

  it("runs a beat that came due during a slow one after it: never two at once, none lost", async () => {
    const timers = createManualTimers(0);
    const s = slowStore();
    const hb = createLeaseHeartbeat({ store: s.store, leaseMs: 300, timers });
    hb.hold("a", 10_000);
    timers.advance(100);
    timers.advance(100);
    timers.advance(100);
    expect(s.calls).toHaveLength(1);
    s.calls[0]!.answer();
    await turn();
    // The beats that came due meanwhile are one more, now.
    expect(s.calls).toHaveLength(2);
    s.calls[1]!.answer();
    await turn();
    expect(s.calls).toHaveLength(2);
    expect(s.most()).toBe(1);
    hb.close();
    expect(timers.pending).toBe(0);
  });
});
