import { readFileSync } from "node:fs";
import { parser } from "@prometheus-io/lezer-promql";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { chatClient, collect, transports, userRequest } from "./helpers/clients.js";
import { baseUrlFor, type Harness, startHarness } from "./helpers/harness.js";
import { scrape } from "./helpers/prometheus.js";

interface Dashboard {
  readonly panels: ReadonlyArray<{ readonly title: string; readonly targets: ReadonlyArray<{ readonly expr: string }> }>;
}

/** Every metric name a PromQL expression selects, found by the PromQL grammar Prometheus itself uses. */
function selectedMetrics(expr: string): string[] {
  const names: string[] = [];
  parser.parse(expr).iterate({
    enter(node) {
      if (node.name === "Identifier" && node.node.parent?.name === "VectorSelector") names.push(expr.slice(node.from, node.to));
    },
  });
  return names;
}

/** A family's series names in the exposition: histograms also answer to _bucket, _sum and _count. */
function exposedNames(families: ReadonlyArray<{ name: string; type: string }>): Set<string> {
  return new Set(families.flatMap((f) => (f.type === "HISTOGRAM" ? [f.name, `${f.name}_bucket`, `${f.name}_sum`, `${f.name}_count`] : [f.name])));
}

let h: Harness;
beforeAll(async () => {
  h = await startHarness({
    routing: (sim) => ({
      providers: {
        one: { kind: "openai", baseUrl: baseUrlFor(sim, "openai"), maxConcurrent: 1, queue: { maxWaiting: 0 } },
        two: { kind: "openai", baseUrl: baseUrlFor(sim, "openai") },
      },
      models: {
        sim: { provider: "two", model: "sim-1?tokens=2" },
        retried: { provider: "two", model: "sim-1?fail=status&status=503&fail_first=1&script=dash-retry", retry: { maxAttempts: 2, baseBackoffMs: 1 } },
        failover: {
          targets: [
            { provider: "two", model: "sim-1?fail=status&status=503&script=dash-fo" },
            { provider: "two", model: "sim-1" },
          ],
        },
        hedged: {
          hedge: { afterMs: 50 },
          targets: [
            { provider: "two", model: "sim-1?ttft_ms=60000&script=dash-slow" },
            { provider: "two", model: "sim-1" },
          ],
        },
        narrow: { provider: "one", model: "sim-1" },
      },
    }),
  });
  // Drive every counter the dashboard reads, so that each has a sample to be found by.
  const client = chatClient(transports(h.url)["grpc (connect-node, h2)"]!);
  for (const model of ["sim", "retried", "failover", "hedged"]) await collect(client.streamChat(userRequest(model, "hi")));
  const abort = new AbortController();
  const held = collect(client.streamChat(userRequest("narrow", "#sim fail=stall fail_at=1 tag=dash-held"), { signal: abort.signal })).catch(() => undefined);
  await h.sim.records.waitFor((r) => r.tag === "dash-held" && r.outcome === "stalled", 30_000);
  await collect(client.streamChat(userRequest("narrow", "hi"))).catch(() => undefined); // shed: the queue holds nobody
  abort.abort(); // a client abort
  await held;
  await h.waitForLog((l) => l.event === "access" && l.code === "canceled");
});
afterAll(() => h.close());

describe("dashboards/sluice.json", () => {
  const dashboard = JSON.parse(readFileSync("dashboards/sluice.json", "utf8")) as Dashboard;

  it("has the panels operators asked for", () => {
    const titles = dashboard.panels.map((p) => p.title.toLowerCase()).join(" | ");
    for (const topic of ["time to first token", "deltas per second", "by outcome", "aborts", "retries, failovers and hedges", "circuit breakers"]) expect(titles).toContain(topic);
  });

  it("queries only metrics Sluice exports", async () => {
    const exposed = exposedNames((await scrape(`${h.url}/metrics`)).families);
    const queried = dashboard.panels.flatMap((p) => p.targets.flatMap((t) => selectedMetrics(t.expr)));
    expect(queried.length).toBeGreaterThan(15);
    // A counter that never counted has no series; the one this run cannot provoke (bytes that were
    // already in flight when a client left) is the only exception.
    const missing = [...new Set(queried)].filter((name) => !exposed.has(name) && name !== "sluice_upstream_deltas_after_abort_total");
    expect(missing).toEqual([]);
  });
});
