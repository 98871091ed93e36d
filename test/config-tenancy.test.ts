import { describe, expect, it } from "vitest";
import { resolveConfig } from "../src/config/config.js";
import { sha256Hex } from "../src/config/key-hash.js";
import { configErrors } from "./helpers/config-errors.js";

const base = {
  providers: { main: { kind: "openai", baseUrl: "http://127.0.0.1:9/v1" } },
  models: { m: { provider: "main", model: "gpt" }, n: { provider: "main", model: "gpt" } },
};
const KEY = "sk-test-config-abcdef0123456789";

describe("auth and store configuration", () => {
  it("is off by default: no keys, no admin service, no Redis (the quick start)", () => {
    const config = resolveConfig(base, {});
    expect(config.auth).toEqual({ required: false, keys: [], teams: new Map(), businessLines: new Map(), tagKeys: new Set(), budgetExceededStatus: 402 });
    expect(config.store).toBeUndefined();
  });

  it("keeps only hashes of keys, applies defaults, and turns budgets into micro-dollars", () => {
    const config = resolveConfig(
      {
        ...base,
        auth: {
          adminKeyEnv: "ADMIN",
          keys: [
            { name: "a", keyEnv: "A_KEY", models: ["m"], limits: { requestsPerMinute: 60, tokensPerMinute: 100_000, concurrentStreams: 10 }, budget: { usd: 25.5 } },
            { name: "b", sha256: sha256Hex("another-key-0123456789").toUpperCase() },
          ],
        },
        store: { redis: { url: "redis://127.0.0.1:6379" } },
      },
      { A_KEY: KEY, ADMIN: "admin-key-0123456789abcdef" },
    );
    expect(config.auth.required).toBe(true);
    expect(config.auth.adminKeySha256).toBe(sha256Hex("admin-key-0123456789abcdef"));
    expect(config.auth.keys).toEqual([
      { name: "a", sha256: sha256Hex(KEY), models: ["m"], limits: { requestsPerMinute: 60, tokensPerMinute: 100_000, concurrentStreams: 10 }, budget: { usdMicros: 25_500_000, period: "month" } },
      { name: "b", sha256: sha256Hex("another-key-0123456789"), limits: {} },
    ]);
    expect(JSON.stringify(config)).not.toContain(KEY);
    expect(config.store?.redis).toEqual({
      url: "redis://127.0.0.1:6379",
      prefix: "sluice:",
      failMode: "open",
      replicas: 1,
      timeoutMs: 250,
      downAfterTimeouts: 3,
      usageStreamMaxLen: 1_000_000,
      bufferMax: 10_000,
      streamLeaseMs: 900_000,
    });
  });

  it("builds the hierarchy: keys in teams, teams in business lines, budgets in micro-dollars", () => {
    const config = resolveConfig(
      {
        ...base,
        auth: {
          keys: [{ name: "a", keyEnv: "A_KEY", team: "search" }],
          teams: [
            { name: "search", businessLine: "consumer", budget: { usd: 10, period: "day" }, limits: { concurrentStreams: 5 } },
            { name: "lab", id: "lab-2027" },
          ],
          businessLines: [{ name: "consumer", budget: { usd: 1_000 } }],
        },
      },
      { A_KEY: KEY },
    );
    expect(config.auth.keys[0]).toMatchObject({ name: "a", team: "search" });
    // A configured level's id is its name, unless it is given one (to start afresh under an old name).
    expect(config.auth.teams.get("search")).toEqual({ name: "search", id: "search", businessLine: "consumer", limits: { concurrentStreams: 5 }, budget: { usdMicros: 10_000_000, period: "day" } });
    expect(config.auth.teams.get("lab")).toEqual({ name: "lab", id: "lab-2027", limits: {} });
    expect(config.auth.businessLines.get("consumer")).toEqual({ name: "consumer", id: "consumer", limits: {}, budget: { usdMicros: 1_000_000_000, period: "month" } });
  });

  it("refuses a key in an unknown team, a team in an unknown business line, and duplicate names, in one report", () => {
    const report = configErrors(
      {
        ...base,
        auth: {
          keys: [{ name: "a", keyEnv: "A_KEY", team: "ghost-team" }],
          teams: [{ name: "t", businessLine: "ghost-line" }, { name: "t" }],
          businessLines: [{ name: "b" }, { name: "b" }],
        },
      },
      { A_KEY: KEY },
    );
    expect(report).toContain('auth.keys.0.team: unknown team "ghost-team"');
    expect(report).toContain('auth.teams.0.businessLine: unknown business line "ghost-line"');
    expect(report).toContain('auth.teams.1.name: duplicate name "t" (also auth.teams.0)');
    expect(report).toContain('auth.businessLines.1.name: duplicate name "b" (also auth.businessLines.0)');
  });

  it("refuses two teams under one id (written, or a name that is another's id): they would share counters and spend", () => {
    const report = configErrors({ ...base, auth: { teams: [{ name: "old", id: "crew" }, { name: "crew" }, { name: "x", id: "y" }, { name: "z", id: "y" }] } }, {});
    expect(report).toContain(`auth.teams.1.name: id "crew" is also auth.teams.0's`);
    expect(report).toContain(`auth.teams.3.id: id "y" is also auth.teams.2's`);
  });

  it("an admin key alone turns authentication on (its keys are created at run time)", () => {
    expect(resolveConfig({ ...base, auth: { adminKeyEnv: "ADMIN" } }, { ADMIN: "admin-key-0123456789abcdef" }).auth.required).toBe(true);
  });

  it("reports every key problem in one run, naming variables but never their values", () => {
    const report = configErrors(
      {
        ...base,
        auth: {
          adminKeyEnv: "ADMIN",
          keys: [
            { name: "a", keyEnv: "UNSET_KEY" },
            { name: "b", keyEnv: "SHORT_KEY" },
            { name: "c", keyEnv: "GOOD_KEY", models: ["m", "ghost"] },
            { name: "c", sha256: sha256Hex(KEY) },
            { name: "d", keyEnv: "GOOD_KEY", sha256: sha256Hex(KEY) },
            { name: "e" },
            { name: "bad name!", sha256: "abc" },
            { name: "f", keyEnv: "G", limits: { requestsPerMinute: 0 }, budget: { usd: -1, period: "year" } },
          ],
        },
        store: { redis: { url: "http://127.0.0.1:6379", failMode: "maybe" } },
      },
      { SHORT_KEY: "short", GOOD_KEY: KEY, ADMIN: "tiny", G: "g-key-0123456789abcdef" },
    );
    for (const expected of [
      "auth.keys.0.keyEnv: environment variable UNSET_KEY is not set",
      "auth.keys.1.keyEnv: environment variable SHORT_KEY holds a key shorter than 16 characters",
      'auth.keys.2.models.1: unknown model alias "ghost"',
      'auth.keys.3.name: duplicate key name "c" (also auth.keys.2)',
      "auth.keys.3: the same key as auth.keys.2",
      "auth.keys.4: give exactly one of keyEnv or sha256",
      "auth.keys.5: give exactly one of keyEnv or sha256",
      "auth.keys.6.name",
      "auth.keys.6.sha256: must be 64 hex digits",
      "auth.keys.7.limits.requestsPerMinute",
      "auth.keys.7.budget.usd",
      "auth.keys.7.budget.period",
      "auth.adminKeyEnv: environment variable ADMIN holds a key shorter than 16 characters",
      "store.redis.url",
      "store.redis.failMode",
    ]) {
      expect(report).toContain(expected);
    }
    expect(report).not.toContain("short\n");
    expect(report).not.toContain(KEY);
  });
});

describe("a budget that can never spend", () => {
  it("is said at start: one warning line per key whose budget may reach an alias with an unpriced target", async () => {
    const { startHarness } = await import("./helpers/harness.js");
    const h = await startHarness({
      routing: (sim) => ({
        providers: { simulator: { kind: "openai", baseUrl: sim.openAiBaseUrl } },
        models: { free: { provider: "simulator", model: "sim-1" }, priced: { provider: "simulator", model: "sim-1", price: { inputPerMTok: 1, outputPerMTok: 1 } } },
      }),
      env: { CAPPED: KEY },
      auth: { keys: [{ name: "capped", keyEnv: "CAPPED", budget: { usd: 1, period: "day" } }] },
    });
    try {
      const lines = h.logs().filter((l) => l.event === "config.unpriced_budget");
      expect(lines).toEqual([expect.objectContaining({ level: 40, key: "capped", budgets: ["key"], aliases: ["free"], targets: ["simulator/sim-1"] })]);
    } finally {
      await h.close();
    }
  });
});
