import { Code, ConnectError } from "@connectrpc/connect";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { chatClient, collect, transports, userRequest } from "./helpers/clients.js";
import { type Harness, startHarness } from "./helpers/harness.js";
import { scrape } from "./helpers/prometheus.js";
import { tenancyEvents } from "./helpers/tenancy-events.js";

const KEYS = { team: "sk-test-metrics-team-3b5d7f9a1c2e4068", rpm: "sk-test-metrics-rpm-8d0f2b4c6e1a3957" };
/** USD per million tokens: 1 and 2 dollars per million, i.e. 1 and 2 micro-dollars per token. */
const PRICE = { inputPerMTok: 1, outputPerMTok: 2 };

const events = tenancyEvents();
let h: Harness;
beforeAll(async () => {
  h = await startHarness({
    routing: (sim) => ({
      providers: { simulator: { kind: "openai", baseUrl: sim.openAiBaseUrl, breaker: { failures: 10_000 } } },
      models: { sim: { provider: "simulator", model: "sim-1?tokens=4", price: PRICE } },
    }),
    env: { TEAM_KEY: KEYS.team, RPM_KEY: KEYS.rpm },
    auth: {
      keys: [
        { name: "team", keyEnv: "TEAM_KEY" },
        { name: "rpm", keyEnv: "RPM_KEY", limits: { requestsPerMinute: 1 } },
      ],
    },
    observer: events.observer,
    // The store's minute window stands still: the second rpm request is refused whatever the machine's speed.
    storeClock: () => Date.UTC(2026, 10, 30, 12),
  });
});
afterAll(() => h.close());

const client = () => chatClient(transports(h.url)["grpc (connect-node, h2)"]!);
const call = (key: string | undefined, requestId: string) => collect(client().streamChat(userRequest("sim", "one two three"), { headers: { "x-request-id": requestId, ...(key ? { authorization: `Bearer ${key}` } : {}) } }));

describe("tenancy metrics", () => {
  it("count refused keys, admissions and refusals by key, tokens, spend and usage records, and the store's health", async () => {
    await expect(call(undefined, "tm-missing")).rejects.toSatisfy((e) => ConnectError.from(e).code === Code.Unauthenticated);
    await expect(call("sk-test-metrics-nobody-000000000000", "tm-unknown")).rejects.toSatisfy((e) => ConnectError.from(e).code === Code.Unauthenticated);
    await call(KEYS.team, "tm-team-1");
    await call(KEYS.team, "tm-team-2");
    await call(KEYS.rpm, "tm-rpm-1");
    await expect(call(KEYS.rpm, "tm-rpm-2")).rejects.toSatisfy((e) => ConnectError.from(e).code === Code.ResourceExhausted);
    const records = await Promise.all(["tm-team-1", "tm-team-2", "tm-rpm-1"].map((id) => events.recorded(id)));

    const m = await scrape(`${h.url}/metrics`);
    expect(m.value("sluice_auth_failures_total", { sluice_auth_failure: "missing", sluice_edge: "grpc" })).toBe(1);
    expect(m.value("sluice_auth_failures_total", { sluice_auth_failure: "unknown" })).toBe(1);
    expect(m.value("sluice_key_admitted_total", { sluice_key: "team", sluice_store_shared: "true" })).toBe(2);
    expect(m.value("sluice_key_admitted_total", { sluice_key: "rpm" })).toBe(1);
    expect(m.value("sluice_key_refused_total", { sluice_key: "rpm", sluice_refusal_reason: "requests" })).toBe(1);
    expect(m.value("sluice_usage_records_total", { sluice_usage_result: "stored" })).toBe(3);

    // Tokens and spend are the usage records' own figures, summed per key.
    const team = records.slice(0, 2);
    const sum = (f: (r: (typeof team)[number]) => number) => team.reduce((n, r) => n + f(r), 0);
    expect(sum((r) => r.outputTokens)).toBe(8);
    expect(m.value("sluice_key_tokens_total", { sluice_key: "team", gen_ai_token_type: "output" })).toBe(8);
    expect(m.value("sluice_key_tokens_total", { sluice_key: "team", gen_ai_token_type: "input" })).toBe(sum((r) => r.inputTokens));
    expect(sum((r) => r.costMicros)).toBeGreaterThan(0);
    expect(m.value("sluice_key_spend_total", { sluice_key: "team" })).toBeCloseTo(sum((r) => r.costMicros) / 1e6, 9);
    expect(m.value("sluice_store_up")).toBe(1);
    // Keys appear by name only.
    const text = await (await fetch(`${h.url}/metrics`)).text();
    for (const key of Object.values(KEYS)) expect(text).not.toContain(key);
  });
});
