import { writeFile } from "node:fs/promises";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { stringify } from "yaml";
import type { ConfigInput } from "../src/config/schema.js";
import { type Simulator, startSimulator } from "../src/simulator/server.js";
import { type GatewayProcess, startGatewayProcess } from "./helpers/gateway-process.js";
import { type Scrape, scrape } from "./helpers/prometheus.js";

/** Counters of rare events whose labels are alias × target × edge: one unlabelled series at 0 until the first event. */
const UNLABELLED = ["sluice_retries_total", "sluice_failovers_total", "sluice_hedges_started_total", "sluice_hedges_won_total", "sluice_client_aborts_total", "sluice_upstream_deltas_after_abort_total"];

/** The samples of a family, as label sets with their values. */
const samples = (s: Scrape, name: string) => (s.families.find((f) => f.name === name)?.metrics ?? []).map((m) => ({ labels: m.labels ?? {}, value: Number(m.value) }));

let sim: Simulator;
let gw: GatewayProcess;
const config = (providers: string[]): ConfigInput => ({
  providers: Object.fromEntries(providers.map((name) => [name, { kind: "openai", baseUrl: sim.openAiBaseUrl }])),
  models: { sim: { provider: providers[0]!, model: "sim-1" } },
});
beforeAll(async () => {
  sim = await startSimulator();
  gw = await startGatewayProcess(config(["primary", "backup"]));
});
afterAll(async () => {
  expect(await gw.stop()).toBe(0);
  await sim.close();
});

describe("a fresh gateway's /metrics already holds its rare-event counters, at 0", () => {
  let fresh: Scrape;
  beforeAll(async () => {
    fresh = await scrape(`${gw.url}/metrics`);
  });

  it.each(UNLABELLED)("%s: one series without labels, 0", (name) => {
    expect(samples(fresh, name)).toEqual([{ labels: {}, value: 0 }]);
  });

  it("sluice_requests_shed_total: per configured provider, reason queue, 0", () => {
    expect(samples(fresh, "sluice_requests_shed_total")).toEqual([
      { labels: { sluice_provider: "primary", sluice_shed_reason: "queue" }, value: 0 },
      { labels: { sluice_provider: "backup", sluice_shed_reason: "queue" }, value: 0 },
    ]);
  });

  it("sluice_config_reloads_total: each result, 0", () => {
    expect(samples(fresh, "sluice_config_reloads_total")).toEqual([
      { labels: { result: "reloaded" }, value: 0 },
      { labels: { result: "failed" }, value: 0 },
      { labels: { result: "skipped" }, value: 0 },
    ]);
  });

  it("a provider a reload adds gets its shed series at 0 too", async () => {
    await writeFile(gw.configFile, stringify(config(["primary", "backup", "third"])));
    gw.child.kill("SIGHUP");
    await gw.waitForLine((l) => l.event === "config.reloaded");
    const after = await scrape(`${gw.url}/metrics`);
    expect(after.value("sluice_requests_shed_total", { sluice_provider: "third", sluice_shed_reason: "queue" })).toBe(0);
    expect(after.labelValues("sluice_requests_shed_total", "sluice_provider")).toEqual(new Set(["primary", "backup", "third"]));
    expect(after.value("sluice_config_reloads_total", { result: "reloaded" })).toBe(1);
  });
});
