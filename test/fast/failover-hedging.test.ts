import { afterEach, describe, expect, it, vi } from "vitest";
import type { ConfigInput } from "../../src/config/schema.js";
import type { Delta } from "../../src/core/delta.js";
import { toGatewayError } from "../../src/core/errors.js";
import type { InProcessSimulator } from "../../src/simulator/in-process.js";
import { simulatedText } from "../../src/simulator/text.js";
import { settled, useFakeClock } from "../helpers/fake-clock.js";
import { type AttemptEvent, createInMemoryGateway, type InMemoryGateway } from "../helpers/in-memory-gateway.js";
import { untilError } from "../helpers/until-error.js";

/** Failover order and hedging, through the real pipeline and attempt loop, upstream in memory. */

let gw: InMemoryGateway | undefined;
afterEach(async () => {
  vi.useRealTimers();
  await gw?.close();
  gw = undefined;
});

type Model = NonNullable<ConfigInput["models"]>[string];
/** Providers a, b and c on the simulator; one alias `m`. */
function open(model: Model): InMemoryGateway {
  const provider = (sim: InProcessSimulator) => ({ kind: "openai" as const, baseUrl: sim.openAiBaseUrl, breaker: { failures: 10_000 } });
  gw = createInMemoryGateway({ routing: (sim) => ({ providers: { a: provider(sim), b: provider(sim), c: provider(sim) }, models: { m: model } }) });
  return gw;
}

const textOf = (deltas: readonly Delta[]) => deltas.map((d) => (d.type === "text" ? d.text : "")).join("");
const providerOf = (deltas: readonly Delta[]) => (deltas[0]?.type === "start" ? deltas[0].provider : undefined);
const starts = (g: InMemoryGateway) => g.attempts.filter((e): e is Extract<AttemptEvent, { type: "started" }> => e.type === "started");
const tried = (g: InMemoryGateway) => starts(g).map((e) => e.target.split("/")[0]);
const FAILING = "sim-1?fail=status&status=503";

describe("failover order (priority)", () => {
  it("untried targets first, in the configured order; the first to answer serves", async () => {
    const g = open({
      retry: { maxAttempts: 5 },
      targets: [
        { provider: "a", model: FAILING },
        { provider: "b", model: FAILING },
        { provider: "c", model: "sim-1?seed=5" },
      ],
    });
    const { received, error } = await untilError(g.stream("m", "hi"), toGatewayError);
    expect(error).toBeUndefined();
    expect(tried(g)).toEqual(["a", "b", "c"]);
    expect(starts(g).map((e) => e.retry)).toEqual([false, false, false]);
    expect(providerOf(received)).toBe("c");
    expect(textOf(received)).toBe(simulatedText(5, 20));
  });

  it("one attempt per target by default: the targets once each, then the error", async () => {
    const g = open({
      targets: [
        { provider: "a", model: FAILING },
        { provider: "b", model: FAILING },
      ],
    });
    const { error } = await untilError(g.stream("m", "hi"), toGatewayError);
    expect(tried(g)).toEqual(["a", "b"]);
    expect(error?.message).toMatch(/^all 2 attempts failed/);
  });

  it("retry.maxAttempts caps the attempts across targets: a later target is never reached", async () => {
    const g = open({
      retry: { maxAttempts: 2 },
      targets: [
        { provider: "a", model: FAILING },
        { provider: "b", model: FAILING },
        { provider: "c", model: "sim-1" },
      ],
    });
    const { error } = await untilError(g.stream("m", "hi"), toGatewayError);
    expect(error?.code).toBe("upstream_unavailable");
    expect(tried(g)).toEqual(["a", "b"]);
    expect(g.sim.records.all()).toHaveLength(2);
  });

  it("no new attempt without room in the client's deadline for the target's headers timeout", async () => {
    useFakeClock();
    const g = open({
      targets: [
        { provider: "a", model: FAILING },
        { provider: "b", model: "sim-1", timeouts: { headersMs: 1_000 } },
      ],
    });
    const { error } = await untilError(g.stream("m", "hi", { deadlineAt: performance.now() + 999 }), toGatewayError);
    expect(tried(g)).toEqual(["a"]);
    expect(error?.message).toBe("provider a failed (status 503)");
  });
});

describe("hedged first token", () => {
  const hedged = {
    hedge: { afterMs: 200 },
    targets: [
      { provider: "a", model: "sim-1?ttft_ms=60000&tag=slow" },
      { provider: "b", model: "sim-1?seed=9&tag=fast" },
    ],
  };

  it("no first delta by hedge.afterMs: the next target starts; the first to answer wins and the loser's upstream is closed at once", async () => {
    const g = open(hedged);
    const clock = useFakeClock();
    const outcome = untilError(g.stream("m", "hi"), toGatewayError);
    await g.sim.records.waitFor((r) => r.tag === "slow" && r.headersAt !== undefined, 30_000);
    await clock.advance(199);
    expect(tried(g)).toEqual(["a"]);
    await clock.advance(1);
    const { received, error } = await outcome;
    expect(error).toBeUndefined();
    expect(providerOf(received)).toBe("b");
    expect(textOf(received)).toBe(simulatedText(9, 20));
    expect(starts(g).map((e) => e.hedge)).toEqual([false, true]);
    expect(g.attempts.find((e) => e.type === "ended" && e.index === 0)).toMatchObject({ outcome: "lost_hedge" });
    // Closed now, not after its 60 s.
    const loser = await g.sim.records.waitFor((r) => r.tag === "slow" && r.endedAt !== undefined, 30_000);
    expect(loser).toMatchObject({ outcome: "client_closed", tokensWritten: 0 });
  });

  it("a first delta before hedge.afterMs starts no hedge", async () => {
    const g = open({ ...hedged, targets: [...hedged.targets].reverse() });
    useFakeClock();
    const { error } = await untilError(g.stream("m", "hi"), toGatewayError);
    expect(error).toBeUndefined();
    await settled();
    // The hedge timer went with the commit (and every phase timer with the stream).
    expect(vi.getTimerCount()).toBe(0);
    expect(tried(g)).toEqual(["b"]);
    expect(g.sim.records.all()).toHaveLength(1);
  });

  it("never more than two in flight: a third target starts only when one of the two fails", async () => {
    const slow = (tag: string) => `sim-1?ttft_ms=5000&tag=${tag}`;
    const g = open({
      hedge: { afterMs: 100 },
      retry: { maxAttempts: 3 },
      timeouts: { firstTokenMs: 1_000 },
      targets: [
        { provider: "a", model: slow("s1") },
        { provider: "b", model: slow("s2") },
        { provider: "c", model: "sim-1?seed=2" },
      ],
    });
    const clock = useFakeClock();
    const outcome = untilError(g.stream("m", "hi"), toGatewayError);
    await g.sim.records.waitFor((r) => r.tag === "s1" && r.headersAt !== undefined, 30_000);
    await clock.advance(100);
    await g.sim.records.waitFor((r) => r.tag === "s2" && r.headersAt !== undefined, 30_000);
    await clock.advance(899);
    expect(tried(g)).toEqual(["a", "b"]);
    await clock.advance(1);
    await g.untilAttempt((e) => e.type === "ended" && e.index === 0);
    // b's hedge time is long past: the third starts on a timer of 0 ms (set during a tick, fake timers count it as 1).
    await clock.advance(1);
    const { received, error } = await outcome;
    expect(error).toBeUndefined();
    expect(providerOf(received)).toBe("c");
    expect(g.attempts.filter((e) => e.type === "ended").map((e) => e.type === "ended" && `${e.target.split("/")[0]} ${e.outcome}`)).toEqual(["a failed", "c committed", "b lost_hedge"]);
  });
});
