import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { ModelRoute, RouteTarget } from "../src/config/config.js";
import { createTargetOrder } from "../src/routing/strategies.js";
import { createTargetStats } from "../src/routing/target-stats.js";
import { createRandom } from "../src/simulator/random.js";
import { chatClient, collect, transports, userRequest } from "./helpers/clients.js";
import { baseUrlFor, type Harness, startHarness } from "./helpers/harness.js";

describe("strategies in isolation", () => {
  const target = (key: string, extra: Partial<RouteTarget> = {}): RouteTarget => ({ key, model: key, weight: 1, provider: {} as RouteTarget["provider"], timeouts: {} as RouteTarget["timeouts"], ...extra });
  const route = (strategy: ModelRoute["strategy"], targets: RouteTarget[]): ModelRoute => ({
    alias: `a-${strategy}`,
    targets,
    strategy,
    retry: { maxAttempts: targets.length, baseBackoffMs: 0, maxBackoffMs: 0 },
    dropUnsupportedParams: false,
  });

  it("weighted: smooth weighted round robin gives each target its share, evenly interleaved", () => {
    const order = createTargetOrder({ stats: createTargetStats() });
    const r = route("weighted", [target("a", { weight: 5 }), target("b", { weight: 1 }), target("c", { weight: 1 })]);
    const picks = Array.from({ length: 70 }, () => order.order(r)[0]!.key);
    expect(picks.filter((k) => k === "a")).toHaveLength(50);
    expect(picks.filter((k) => k === "b")).toHaveLength(10);
    // Evenly spread: never more than five a's in a row.
    expect(picks.join("")).not.toMatch(/a{6}/);
    // The failover order after the pick follows weight.
    expect(order.order(r).map((t) => t.key)).toHaveLength(3);
  });

  it("weighted: an alias reloaded with more targets rotates over all of them, its rotation started afresh", () => {
    const order = createTargetOrder({ stats: createTargetStats() });
    const before = route("weighted", [target("a"), target("b")]);
    order.order(before);
    const after = route("weighted", [target("a"), target("b"), target("c", { weight: 2 })]);
    const picks = Array.from({ length: 8 }, () => order.order(after)[0]!.key);
    expect(picks.sort().join("")).toBe("aabbcccc");
  });

  it("least-latency: unmeasured targets first, then the lowest smoothed TTFT; a small share explores", () => {
    const stats = createTargetStats();
    const draws = [0.5, 0.5, 0.5, 0.01, 0.9];
    const order = createTargetOrder({ stats, random: () => draws.shift() ?? 0.5, exploration: 0.05 });
    const r = route("least-latency", [target("slow"), target("fast")]);
    stats.recordTtft("slow", 900);
    expect(order.order(r)[0]!.key).toBe("fast"); // never measured: tried first
    stats.recordTtft("fast", 20);
    expect(order.order(r)[0]!.key).toBe("fast");
    stats.recordTtft("fast", 2000); // it slowed down: the EWMA follows
    stats.recordTtft("fast", 2000);
    expect(order.order(r)[0]!.key).toBe("slow");
    // A draw under the exploration share sends this one request to a random target.
    expect(order.order(r)[0]!.key).toBe("fast");
  });

  it("least-busy: fewest streams in flight; ties keep the configured order", () => {
    const stats = createTargetStats();
    const order = createTargetOrder({ stats });
    const r = route("least-busy", [target("a"), target("b")]);
    expect(order.order(r)[0]!.key).toBe("a");
    stats.begin("a");
    expect(order.order(r)[0]!.key).toBe("b");
    stats.begin("b");
    stats.begin("b");
    expect(order.order(r)[0]!.key).toBe("a");
  });

  it("cost: the cheapest blended price first, unpriced targets last", () => {
    const order = createTargetOrder({ stats: createTargetStats() });
    const r = route("cost", [target("unpriced"), target("dear", { price: { inputPerMTok: 3, outputPerMTok: 15 } }), target("cheap", { price: { inputPerMTok: 0.15, outputPerMTok: 0.6 } })]);
    expect(order.order(r).map((t) => t.key)).toEqual(["cheap", "dear", "unpriced"]);
  });
});

describe("strategies over real requests", () => {
  let h: Harness;
  beforeAll(async () => {
    h = await startHarness({
      random: createRandom(42),
      routing: (sim) => ({
        providers: {
          one: { kind: "openai", baseUrl: baseUrlFor(sim, "openai") },
          two: { kind: "anthropic", baseUrl: baseUrlFor(sim, "anthropic") },
        },
        models: {
          priority: {
            targets: [
              { provider: "one", model: "sim-1?tokens=2&tag=p-1" },
              { provider: "two", model: "sim-1?tokens=2&tag=p-2" },
            ],
          },
          weighted: {
            strategy: "weighted",
            targets: [
              { provider: "one", model: "sim-1?tokens=2&tag=w-1", weight: 3 },
              { provider: "two", model: "sim-1?tokens=2&tag=w-2", weight: 1 },
            ],
          },
          busy: {
            strategy: "least-busy",
            targets: [
              { provider: "one", model: "sim-1?tokens=2&tag=b-1" },
              { provider: "two", model: "sim-1?tokens=2&tag=b-2" },
            ],
          },
          cheapest: {
            strategy: "cost",
            targets: [
              { provider: "one", model: "sim-1?tokens=2&tag=c-1", price: { inputPerMTok: 2.5, outputPerMTok: 10 } },
              { provider: "two", model: "sim-1?tokens=2&tag=c-2", price: { inputPerMTok: 0.8, outputPerMTok: 4 } },
            ],
          },
        },
      }),
    });
  });
  afterAll(() => h.close());

  const client = () => chatClient(transports(h.url)["grpc (connect-node, h2)"]!);
  const servedBy = async (model: string, text = "hi") => {
    const start = (await collect(client().streamChat(userRequest(model, text))))[0]!.delta;
    return start.case === "start" ? start.value.provider : "";
  };
  const count = (tag: string) => h.sim.records.all().filter((r) => r.tag === tag).length;

  it("priority sends everything to the first target", async () => {
    for (let i = 0; i < 10; i++) expect(await servedBy("priority")).toBe("one");
    expect(count("p-1")).toBe(10);
    expect(count("p-2")).toBe(0);
  });

  it("weighted 3:1 over 40 requests: exactly 30 and 10", async () => {
    for (let i = 0; i < 40; i++) await servedBy("weighted");
    expect(count("w-1")).toBe(30);
    expect(count("w-2")).toBe(10);
  });

  it("least-busy sends the next request where fewer streams are in flight", async () => {
    const abort = new AbortController();
    const held = collect(client().streamChat(userRequest("busy", "#sim fail=stall fail_at=1 tag=b-held"), { signal: abort.signal })).catch(() => undefined);
    await h.sim.records.waitFor((r) => r.tag === "b-held" && r.outcome === "stalled", 30_000);
    expect(await servedBy("busy")).toBe("two");
    abort.abort();
    await held;
  });

  it("cost picks the cheaper target", async () => {
    for (let i = 0; i < 5; i++) expect(await servedBy("cheapest")).toBe("two");
  });
});
