import { afterEach, describe, expect, it, vi } from "vitest";
import type { ConfigInput } from "../../src/config/schema.js";
import type { Delta } from "../../src/core/delta.js";
import { GatewayError, toGatewayError } from "../../src/core/errors.js";
import type { InProcessSimulator } from "../../src/simulator/in-process.js";
import { simulatedText } from "../../src/simulator/text.js";
import { settled, useFakeClock } from "../helpers/fake-clock.js";
import { type AttemptEvent, createInMemoryGateway, type InMemoryGateway, type InMemoryGatewayOptions } from "../helpers/in-memory-gateway.js";
import { untilError } from "../helpers/until-error.js";

/** Retry classification and backoff, through the real pipeline and attempt loop, upstream in memory. */

let gw: InMemoryGateway | undefined;
afterEach(async () => {
  vi.useRealTimers();
  await gw?.close();
  gw = undefined;
});

function open(options: InMemoryGatewayOptions): InMemoryGateway {
  gw = createInMemoryGateway(options);
  return gw;
}

type Models = NonNullable<ConfigInput["models"]>;
/** Providers `a` and `b` on the simulator (OpenAI format; breakers that never open here). */
const routing = (models: Models) => (sim: InProcessSimulator) => ({
  providers: {
    a: { kind: "openai" as const, baseUrl: sim.openAiBaseUrl, breaker: { failures: 10_000 } },
    b: { kind: "openai" as const, baseUrl: sim.openAiBaseUrl, breaker: { failures: 10_000 } },
  },
  models,
});

const textOf = (deltas: readonly Delta[]) => deltas.map((d) => (d.type === "text" ? d.text : "")).join("");
const started = (g: InMemoryGateway) => g.attempts.filter((e) => e.type === "started");
const tried = (g: InMemoryGateway) => started(g).map((e) => e.target.split("/")[0]);
const isEnd = (index: number) => (e: AttemptEvent) => e.type === "ended" && e.index === index;
const isStart = (index: number) => (e: AttemptEvent) => e.type === "started" && e.index === index;

describe("what a failure before the first delta leads to", () => {
  // Target a fails its first request with the failure under test, then answers; b always fails with a 503.
  // fatal: a alone. next: a is never tried again (a, b, b). retry: a is tried again and answers (a, b, a).
  const cases: Array<[string, string, "fatal" | "next" | "retry"]> = [
    ["fail=status&status=400", "upstream_rejected", "fatal"],
    ["fail=status&status=401", "upstream_auth", "next"],
    ["fail=status&status=404", "upstream_not_found", "next"],
    ["fail=error_event&fail_at=0&inband=quota", "upstream_quota_exhausted", "next"],
    ["fail=status&status=429", "upstream_rate_limited", "retry"],
    ["fail=status&status=503", "upstream_unavailable", "retry"],
    ["fail=reset_before_headers", "upstream_unavailable", "retry"],
    ["fail=drop&fail_at=0", "upstream_unavailable", "retry"],
    ["fail=malformed&fail_at=0", "upstream_protocol", "retry"],
    ["fail=error_event&fail_at=0", "upstream_stream_error", "retry"],
  ];
  for (const [knobs, code, kind] of cases) {
    it(`${knobs}: ${code}, ${kind}`, async () => {
      const g = open({
        routing: routing({
          m: {
            retry: { maxAttempts: 3 },
            targets: [
              { provider: "a", model: `sim-1?${knobs}&fail_first=1&script=a` },
              { provider: "b", model: "sim-1?fail=status&status=503&script=b" },
            ],
          },
        }),
      });
      const { received, error } = await untilError(g.stream("m", "hi"), toGatewayError);
      expect(g.attempts.find(isEnd(0))).toMatchObject({ outcome: "failed", code });
      if (kind === "fatal") {
        expect(tried(g)).toEqual(["a"]);
        expect(error?.code).toBe(code);
      } else if (kind === "next") {
        expect(tried(g)).toEqual(["a", "b", "b"]);
        expect(error?.code).toBe("upstream_unavailable");
      } else {
        expect(tried(g)).toEqual(["a", "b", "a"]);
        expect(error).toBeUndefined();
        expect(textOf(received)).toBe(simulatedText(1, 20));
      }
    });
  }

  it("after the first delta nothing is retried: the client gets what came, then the error", async () => {
    const g = open({
      routing: routing({
        m: {
          retry: { maxAttempts: 3 },
          targets: [
            { provider: "a", model: "sim-1?fail=drop&fail_at=3" },
            { provider: "b", model: "sim-1" },
          ],
        },
      }),
    });
    const { received, error } = await untilError(g.stream("m", "hi"), toGatewayError);
    expect(textOf(received)).toBe(simulatedText(1, 3));
    expect(error?.code).toBe("upstream_unavailable");
    expect(error?.message).toBe("provider a closed the connection mid-stream");
    expect(tried(g)).toEqual(["a"]);
    expect(g.sim.records.all()).toHaveLength(1);
  });

  it("when every attempt failed, the error lists each one and takes the last one's code", async () => {
    const g = open({
      routing: routing({
        m: {
          retry: { maxAttempts: 3 },
          targets: [
            { provider: "a", model: "sim-1?fail=status&status=500" },
            { provider: "b", model: "sim-1?fail=status&status=429" },
          ],
        },
      }),
    });
    const { received, error } = await untilError(g.stream("m", "hi"), toGatewayError);
    expect(received).toEqual([]);
    expect(tried(g)).toEqual(["a", "b", "a"]);
    expect(error?.code).toBe("upstream_unavailable");
    expect(error?.message).toMatch(/^all 3 attempts failed: a\/sim-1\?fail=status&status=500: provider a failed \(status 500\) \(\d+ ms\); b\/.*status 429.*; a\/.*status 500/);
  });
});

describe("backoff before trying a target again", () => {
  it("full jitter: with the draw pinned at 0.5, the second try waits 50 ms and the third 100 ms (base 100 ms, doubling)", async () => {
    const g = open({
      random: () => 0.5,
      routing: routing({ m: { provider: "a", model: "sim-1?fail=status&status=503&fail_first=2", retry: { maxAttempts: 3, baseBackoffMs: 100, maxBackoffMs: 1000 } } }),
    });
    const clock = useFakeClock();
    const outcome = untilError(g.stream("m", "hi"), toGatewayError);
    await g.untilAttempt(isEnd(0));
    await clock.advance(49);
    expect(started(g)).toHaveLength(1);
    await clock.advance(1);
    await g.untilAttempt(isStart(1));
    await g.untilAttempt(isEnd(1));
    await clock.advance(99);
    expect(started(g)).toHaveLength(2);
    await clock.advance(1);
    const { received, error } = await outcome;
    expect(error).toBeUndefined();
    expect(textOf(received)).toBe(simulatedText(1, 20));
    expect(started(g).map((e) => e.type === "started" && e.retry)).toEqual([false, true, true]);
    expect(g.sim.records.all().map((r) => r.outcome)).toEqual(["failed", "failed", "completed"]);
  });

  it("the backoff is capped at maxBackoffMs", async () => {
    const g = open({
      random: () => 0.999,
      routing: routing({ m: { provider: "a", model: "sim-1?fail=status&status=503&fail_first=1", retry: { maxAttempts: 2, baseBackoffMs: 5_000, maxBackoffMs: 300 } } }),
    });
    const clock = useFakeClock();
    const outcome = untilError(g.stream("m", "hi"), toGatewayError);
    await g.untilAttempt(isEnd(0));
    await clock.advance(298);
    expect(started(g)).toHaveLength(1);
    await clock.advance(1);
    expect((await outcome).error).toBeUndefined();
  });

  it("Retry-After is a floor: a 429 asking for 2 s is not tried again sooner, even with no backoff drawn", async () => {
    const g = open({ routing: routing({ m: { provider: "a", model: "sim-1?fail=status&status=429&retry_after=2&fail_first=1", retry: { maxAttempts: 2 } } }) });
    const clock = useFakeClock();
    const outcome = untilError(g.stream("m", "hi"), toGatewayError);
    await g.untilAttempt(isEnd(0));
    await clock.advance(1_999);
    expect(started(g)).toHaveLength(1);
    await clock.advance(1);
    const { received, error } = await outcome;
    expect(error).toBeUndefined();
    expect(textOf(received)).toBe(simulatedText(1, 20));
  });

  it("a client that leaves during the backoff ends the wait at once and leaves no timer behind", async () => {
    const g = open({ random: () => 0.5, routing: routing({ m: { provider: "a", model: "sim-1?fail=status&status=503", retry: { maxAttempts: 2, baseBackoffMs: 60_000, maxBackoffMs: 60_000 } } }) });
    const clock = useFakeClock();
    const client = new AbortController();
    const outcome = untilError(g.stream("m", "hi", { signal: client.signal }), toGatewayError);
    await g.untilAttempt(isEnd(0));
    client.abort(new GatewayError("canceled", "client left"));
    const { error } = await outcome;
    expect(error?.code).toBe("canceled");
    await settled();
    expect(vi.getTimerCount()).toBe(0);
    await clock.advance(60_000);
    expect(started(g)).toHaveLength(1);
  });
});

describe("phase timeouts on the fake clock", () => {
  it("no first token within firstTokenMs: upstream_timeout, the upstream request is closed, the next target answers", async () => {
    const g = open({
      routing: routing({
        m: {
          targets: [
            { provider: "a", model: "sim-1?ttft_ms=60000&tag=slow", timeouts: { firstTokenMs: 1_000 } },
            { provider: "b", model: "sim-1?seed=4" },
          ],
        },
      }),
    });
    const clock = useFakeClock();
    const outcome = untilError(g.stream("m", "hi"), toGatewayError);
    await g.sim.records.waitFor((r) => r.tag === "slow" && r.headersAt !== undefined, 30_000);
    await clock.advance(999);
    expect(started(g)).toHaveLength(1);
    await clock.advance(1);
    const { received, error } = await outcome;
    expect(error).toBeUndefined();
    expect(textOf(received)).toBe(simulatedText(4, 20));
    const ended = g.attempts.find(isEnd(0));
    expect(ended).toMatchObject({ outcome: "failed", code: "upstream_timeout" });
    const slow = await g.sim.records.waitFor((r) => r.tag === "slow" && r.endedAt !== undefined, 30_000);
    expect(slow.outcome).toBe("client_closed");
  });
});
