import { afterEach, describe, expect, it, vi } from "vitest";
import type { ConfigInput } from "../../src/config/schema.js";
import type { Delta } from "../../src/core/delta.js";
import { GatewayError, toGatewayError } from "../../src/core/errors.js";
import { simulatedText } from "../../src/simulator/text.js";
import { type FakeClock, useFakeClock } from "../helpers/fake-clock.js";
import { createInMemoryGateway, type InMemoryGateway } from "../helpers/in-memory-gateway.js";
import { untilError } from "../helpers/until-error.js";

/** Circuit breakers in the attempt loop: the real pipeline, its breakers on the fake clock, upstream in memory. */

let gw: InMemoryGateway | undefined;
let clock: FakeClock;
afterEach(async () => {
  vi.useRealTimers();
  await gw?.close();
  gw = undefined;
});

const BREAKER = { failures: 3, windowMs: 10_000, openMs: 5_000 };

/** Provider a with the breaker above, b with one that never opens; alias `m`. */
function open(model: NonNullable<ConfigInput["models"]>[string]): InMemoryGateway {
  clock = useFakeClock();
  gw = createInMemoryGateway({
    routing: (sim) => ({
      providers: {
        a: { kind: "openai", baseUrl: sim.openAiBaseUrl, breaker: BREAKER },
        b: { kind: "openai", baseUrl: sim.openAiBaseUrl, breaker: { failures: 10_000 } },
      },
      models: { m: model },
    }),
  });
  return gw;
}

const run = (g: InMemoryGateway, text = "hi", signal?: AbortSignal) => untilError(g.stream("m", text, signal ? { signal } : {}), toGatewayError);
const textOf = (deltas: readonly Delta[]) => deltas.map((d) => (d.type === "text" ? d.text : "")).join("");
const stateOf = (g: InMemoryGateway) => [...g.breakers.states()].find(([key]) => key.startsWith("a/"))?.[1];
const upstream = (g: InMemoryGateway) => g.sim.records.all().length;

describe("a target's breaker in the attempt loop", () => {
  it("three failures open it: the next request fails at once with circuit_open and never reaches the provider", async () => {
    const g = open({ provider: "a", model: "sim-1?fail=status&status=500&fail_first=3" });
    for (let i = 0; i < 3; i++) expect((await run(g)).error?.code).toBe("upstream_unavailable");
    expect(stateOf(g)).toBe("open");
    const refused = (await run(g)).error;
    expect(refused?.code).toBe("circuit_open");
    expect(refused?.retryAfterMs).toBe(5_000);
    expect(upstream(g)).toBe(3);
    await clock.advance(4_999);
    expect((await run(g)).error).toMatchObject({ code: "circuit_open", retryAfterMs: 1 });
    expect(upstream(g)).toBe(3);
  });

  it("after openMs one probe goes through; its success closes the breaker", async () => {
    const g = open({ provider: "a", model: "sim-1?fail=status&status=500&fail_first=3" });
    for (let i = 0; i < 3; i++) await run(g);
    await clock.advance(5_000);
    expect(stateOf(g)).toBe("half_open");
    const probe = await run(g);
    expect(probe.error).toBeUndefined();
    expect(textOf(probe.received)).toBe(simulatedText(1, 20));
    expect(stateOf(g)).toBe("closed");
    expect(upstream(g)).toBe(4);
  });

  it("a failed probe opens it for another openMs", async () => {
    const g = open({ provider: "a", model: "sim-1?fail=status&status=500" });
    for (let i = 0; i < 3; i++) await run(g);
    await clock.advance(5_000);
    expect((await run(g)).error?.code).toBe("upstream_unavailable");
    expect(upstream(g)).toBe(4);
    expect(stateOf(g)).toBe("open");
    expect((await run(g)).error).toMatchObject({ code: "circuit_open", retryAfterMs: 5_000 });
  });

  it("one probe at a time: while it has not answered, other requests are refused; its first delta closes the breaker", async () => {
    const g = open({ provider: "a", model: "sim-1?fail=status&status=500&fail_first=3" });
    for (let i = 0; i < 3; i++) await run(g);
    await clock.advance(5_000);
    const probe = run(g, "#sim ttft_ms=1000 tag=probe");
    await g.sim.records.waitFor((r) => r.tag === "probe" && r.headersAt !== undefined, 30_000);
    expect((await run(g)).error?.code).toBe("circuit_open");
    await clock.advance(1_000);
    expect((await probe).error).toBeUndefined();
    expect(stateOf(g)).toBe("closed");
  });

  it("a target whose breaker is open is skipped: failover goes straight to the next", async () => {
    const g = open({
      targets: [
        { provider: "a", model: "sim-1?fail=status&status=500" },
        { provider: "b", model: "sim-1?seed=3" },
      ],
    });
    for (let i = 0; i < 3; i++) expect((await run(g)).error).toBeUndefined();
    expect(stateOf(g)).toBe("open");
    const before = g.attempts.length;
    const { received, error } = await run(g);
    expect(error).toBeUndefined();
    expect(received[0]).toMatchObject({ type: "start", provider: "b" });
    expect(g.attempts.slice(before).map((e) => e.target.split("/")[0])).toEqual(["b", "b"]);
  });

  it("failures that are not the target's fault count for nothing: rejected requests, clients that left", async () => {
    const g = open({ provider: "a", model: "sim-1?fail=status&status=400" });
    for (let i = 0; i < 5; i++) expect((await run(g)).error?.code).toBe("upstream_rejected");
    expect(stateOf(g)).toBe("closed");
    for (let i = 0; i < 5; i++) {
      const client = new AbortController();
      const left = run(g, `#sim fail=stall fail_at=0 tag=left-${i}`, client.signal);
      await g.sim.records.waitFor((r) => r.tag === `left-${i}` && r.outcome === "stalled", 30_000);
      client.abort(new GatewayError("canceled", "client left"));
      expect((await left).error?.code).toBe("canceled");
    }
    expect(stateOf(g)).toBe("closed");
  });

  it("failures further apart than windowMs do not add up", async () => {
    const g = open({ provider: "a", model: "sim-1?fail=status&status=500" });
    await run(g);
    await run(g);
    await clock.advance(10_000);
    await run(g);
    await run(g);
    expect(stateOf(g)).toBe("closed");
    await run(g);
    expect(stateOf(g)).toBe("open");
  });
});
