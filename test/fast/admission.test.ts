import { afterEach, describe, expect, it, vi } from "vitest";
import type { ConfigInput } from "../../src/config/schema.js";
import { GatewayError, toGatewayError } from "../../src/core/errors.js";
import { useFakeClock } from "../helpers/fake-clock.js";
import { createInMemoryGateway, type InMemoryGateway } from "../helpers/in-memory-gateway.js";
import { untilError } from "../helpers/until-error.js";

/** The admission queue in front of a provider (admission/provider-gate.ts), as requests through the pipeline meet it. */

let gw: InMemoryGateway | undefined;
afterEach(async () => {
  vi.useRealTimers();
  await gw?.close();
  gw = undefined;
});

/** Provider a: one stream at a time, `maxWaiting` behind it for at most 1 s; b: unlimited. */
function open(maxWaiting: number, model: NonNullable<ConfigInput["models"]>[string] = { provider: "a", model: "sim-1?tokens=3" }): InMemoryGateway {
  gw = createInMemoryGateway({
    routing: (sim) => ({
      providers: {
        a: { kind: "openai", baseUrl: sim.openAiBaseUrl, maxConcurrent: 1, queue: { maxWaiting, timeoutMs: 1_000 }, breaker: { failures: 10_000 } },
        b: { kind: "openai", baseUrl: sim.openAiBaseUrl },
      },
      models: { m: model },
    }),
  });
  return gw;
}

const run = (g: InMemoryGateway, text: string, signal?: AbortSignal) => untilError(g.stream("m", text, signal ? { signal } : {}), toGatewayError);
const waiting = (g: InMemoryGateway, count: number) => g.gates.until("a", (gate) => gate.waiting === count);
const gateOf = (g: InMemoryGateway) => g.gates.gateFor(g.config.providers.get("a")!);

/** A stream that holds provider a's one slot until `release()`. */
async function holder(g: InMemoryGateway) {
  const done = run(g, "#sim hold_at=1 tag=holder");
  await g.sim.records.waitFor((r) => r.tag === "holder" && r.heldAt !== undefined, 30_000);
  return {
    async release() {
      g.sim.records.release("holder");
      expect((await done).error).toBeUndefined();
    },
  };
}

describe("a provider's admission queue", () => {
  it("admits waiters first come, first served as the slot frees", async () => {
    const g = open(10);
    const slot = await holder(g);
    const waiters = [];
    for (let i = 1; i <= 3; i++) {
      waiters.push(run(g, `#sim tag=w${i}`));
      await waiting(g, i);
    }
    expect(g.sim.records.all()).toHaveLength(1);
    await slot.release();
    for (const w of await Promise.all(waiters)) expect(w.error).toBeUndefined();
    expect(g.sim.records.all().map((r) => r.tag)).toEqual(["holder", "w1", "w2", "w3"]);
    expect({ inFlight: gateOf(g).inFlight, waiting: gateOf(g).waiting }).toEqual({ inFlight: 0, waiting: 0 });
  });

  it("a full queue sheds the newcomer at once: overloaded, retry after 1 s, the provider never sees it", async () => {
    const g = open(1);
    const slot = await holder(g);
    const queued = run(g, "#sim tag=queued");
    await waiting(g, 1);
    const { error } = await run(g, "#sim tag=shed");
    expect(error).toMatchObject({ code: "overloaded", retryAfterMs: 1_000, message: "provider a is at its limit of 1 streams and its queue is full" });
    expect(g.attempts.find((e) => e.type === "ended" && e.requestId === "req-3")).toMatchObject({ outcome: "shed" });
    await slot.release();
    expect((await queued).error).toBeUndefined();
    expect(g.sim.records.all().map((r) => r.tag)).toEqual(["holder", "queued"]);
  });

  it("a wait longer than the queue timeout is shed", async () => {
    const clock = useFakeClock();
    const g = open(5);
    const slot = await holder(g);
    const queued = run(g, "#sim tag=late");
    await waiting(g, 1);
    await clock.advance(999);
    expect(gateOf(g).waiting).toBe(1);
    await clock.advance(1);
    const { error } = await queued;
    expect(error).toMatchObject({ code: "overloaded", message: "provider a had no free stream within 1000 ms (queue timeout)" });
    expect(gateOf(g).waiting).toBe(0);
    await slot.release();
    expect(g.sim.records.all().map((r) => r.tag)).toEqual(["holder"]);
  });

  it("a waiter whose client leaves is out of the queue at once, and never reaches the provider", async () => {
    const g = open(5);
    const slot = await holder(g);
    const client = new AbortController();
    const left = run(g, "#sim tag=left", client.signal);
    await waiting(g, 1);
    client.abort(new GatewayError("canceled", "client left"));
    expect((await left).error?.code).toBe("canceled");
    expect(gateOf(g).waiting).toBe(0);
    await slot.release();
    expect(g.sim.records.all().map((r) => r.tag)).toEqual(["holder"]);
  });

  it("shed by one provider's queue, a request fails over to the next target", async () => {
    const g = open(0, {
      targets: [
        { provider: "a", model: "sim-1?tokens=3" },
        { provider: "b", model: "sim-1?tokens=3" },
      ],
    });
    const slot = await holder(g);
    const { received, error } = await run(g, "#sim tag=elsewhere");
    expect(error).toBeUndefined();
    expect(received[0]).toMatchObject({ type: "start", provider: "b" });
    expect(g.attempts.filter((e) => e.type === "ended" && e.requestId === "req-2").map((e) => e.type === "ended" && e.outcome)).toEqual(["shed", "committed"]);
    await slot.release();
  });
});
