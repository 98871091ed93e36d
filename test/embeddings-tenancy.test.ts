import OpenAI from "openai";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type Harness, startHarness } from "./helpers/harness.js";
import { tenancyEvents } from "./helpers/tenancy-events.js";

const KEYS = { team: "sk-test-embed-team-5c1e3a7b9d2f4860", narrow: "sk-test-embed-narrow-0a2c4e6b8d1f3975" };
/** Two dollars per million input tokens: two micro-dollars per token. */
const PRICE = { inputPerMTok: 2, outputPerMTok: 10 };

const events = tenancyEvents();
let h: Harness;
beforeAll(async () => {
  h = await startHarness({
    routing: (sim) => ({
      providers: { oa: { kind: "openai", baseUrl: sim.openAiBaseUrl, breaker: { failures: 10_000 } } },
      models: { embed: { provider: "oa", model: "sim-embed", price: PRICE }, other: { provider: "oa", model: "sim-embed" } },
    }),
    env: { TEAM_KEY: KEYS.team, NARROW_KEY: KEYS.narrow },
    auth: {
      keys: [
        { name: "team", keyEnv: "TEAM_KEY", limits: { requestsPerMinute: 1_000 } },
        { name: "narrow", keyEnv: "NARROW_KEY", models: ["embed"], limits: { requestsPerMinute: 1 } },
      ],
    },
    observer: events.observer,
    // The store's minute window stands still: the second narrow request is refused whatever the machine's speed.
    storeClock: () => Date.UTC(2026, 11, 3, 12),
  });
});
afterAll(() => h.close());

const client = (key: string) => new OpenAI({ baseURL: `${h.url}/v1`, apiKey: key, maxRetries: 0 });

describe("embeddings go through the key's admission and are charged", () => {
  it("records the call's usage and cost (input tokens only), with the key's quota headers", async () => {
    const { data: res, response } = await client(KEYS.team)
      .embeddings.create({ model: "embed", input: ["one two three", "four five"], encoding_format: "float" })
      .withResponse();
    expect(res.usage.prompt_tokens).toBe(5);
    expect(response.headers.get("x-ratelimit-limit-requests")).toBe("1000");
    const requestId = response.headers.get("x-request-id")!;
    const record = await events.recorded(requestId);
    expect(record).toMatchObject({ key: "team", alias: "embed", target: "oa/sim-embed", inputTokens: 5, outputTokens: 0, costMicros: 10, estimated: false, outcome: "completed" });
  });

  it("refuses an alias outside the key's allowlist (403), a missing key (401), and a key over its limit (429)", async () => {
    await expect(client(KEYS.narrow).embeddings.create({ model: "other", input: "x" })).rejects.toMatchObject({ status: 403 });
    await expect(client("sk-wrong").embeddings.create({ model: "embed", input: "x" })).rejects.toMatchObject({ status: 401 });
    await client(KEYS.narrow).embeddings.create({ model: "embed", input: "x" });
    await expect(client(KEYS.narrow).embeddings.create({ model: "embed", input: "x" })).rejects.toMatchObject({ status: 429 });
  });
});
