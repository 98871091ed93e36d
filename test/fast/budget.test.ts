import { afterEach, describe, expect, it } from "vitest";
import { sha256Hex } from "../../src/config/key-hash.js";
import { toGatewayError } from "../../src/core/errors.js";
import { toOpenAiError } from "../../src/edges/openai/http-errors.js";
import { subjectOf } from "../../src/store/tenant-store.js";
import { keyId, type Principal } from "../../src/tenancy/principal.js";
import { estimatedInputTokens } from "../../src/usage/prompt-size.js";
import { createInMemoryGateway, type InMemoryGateway, request } from "../helpers/in-memory-gateway.js";
import { untilError } from "../helpers/until-error.js";

/**
 * A key's budget through the pipeline, against the in-process tenant store:
 * admission reserves the most a request can cost, the settle replaces the
 * reservation with what it did cost.
 */

const KEY = "sk-fast-tier-budget";
// 1 USD per million input tokens and 10 per million output: 1 and 10 micro-dollars a token.
const PRICE = { inputPerMTok: 1, outputPerMTok: 10 };
const MAX_TOKENS = 1_000;

let gw: InMemoryGateway | undefined;
afterEach(async () => {
  await gw?.close();
  gw = undefined;
});

async function open(budgetUsd: number, budgetExceededStatus?: 402 | 429): Promise<{ g: InMemoryGateway; principal: Principal }> {
  const g = createInMemoryGateway({
    auth: { keys: [{ name: "team", sha256: sha256Hex(KEY), budget: { usd: budgetUsd, period: "day" } }], ...(budgetExceededStatus ? { budgetExceededStatus } : {}) },
    routing: (sim) => ({
      providers: { p: { kind: "openai", baseUrl: sim.openAiBaseUrl } },
      models: { m: { provider: "p", model: "sim-1?tokens=5", price: PRICE } },
    }),
  });
  gw = g;
  const principal = await g.tenancy.identify(`Bearer ${KEY}`, "memory");
  return { g, principal: principal! };
}

const run = (g: InMemoryGateway, principal: Principal, text: string) => untilError(g.stream("m", text, { principal, maxTokens: MAX_TOKENS }), toGatewayError);
const spend = (g: InMemoryGateway) => g.tenancy.store.usage(subjectOf({ level: "key", id: keyId(sha256Hex(KEY)) }), "day");
/** What admission reserves for `text`: every input token it estimates and max_tokens of output, at the price. */
const reservation = (text: string) => estimatedInputTokens(request("m", text, MAX_TOKENS)) * 1 + MAX_TOKENS * 10;

describe("budget reservation and settle (memory store)", () => {
  it("a running stream holds the most it can cost; its end replaces that with what it cost", async () => {
    const { g, principal } = await open(1);
    const text = "#sim hold_at=2 tag=held";
    const done = run(g, principal, text);
    await g.sim.records.waitFor((r) => r.tag === "held" && r.heldAt !== undefined, 30_000);
    expect(await spend(g)).toMatchObject({ reservedMicros: reservation(text), spendMicros: 0, requests: 0 });
    g.sim.records.release("held");
    expect((await done).error).toBeUndefined();
    const record = await g.untilSettled("req-1");
    // The simulator reports one input token per word of the prompt (3) and 5 output tokens.
    expect(record).toMatchObject({ key: "team", inputTokens: 3, outputTokens: 5, costMicros: 3 * 1 + 5 * 10, outcome: "completed", estimated: false });
    expect(await spend(g)).toMatchObject({ reservedMicros: 0, spendMicros: 53, requests: 1, outputTokens: 5 });
  });

  it("a request whose reservation does not fit beside those in flight is refused, saying what is spent and what is held", async () => {
    // Room for one reservation (~0.010 USD), not two.
    const { g, principal } = await open(0.015);
    const first = run(g, principal, "#sim hold_at=1 tag=first");
    await g.sim.records.waitFor((r) => r.tag === "first" && r.heldAt !== undefined, 30_000);
    const { received, error } = await run(g, principal, "second");
    expect(received).toEqual([]);
    expect(error?.code).toBe("budget_exceeded");
    expect(error?.message).toMatch(/^key team cannot reserve 0\.0100\d+ USD for this request: it has spent 0(\.0+)? USD of its budget of 0\.015 USD for this day, and streams in flight hold 0\.0100\d+ USD more \(it renews in /);
    expect(g.sim.records.all()).toHaveLength(1);
    g.sim.records.release("first");
    expect((await first).error).toBeUndefined();
    await g.untilSettled("req-1");
    // Settled at what it cost: the next request fits again.
    expect((await run(g, principal, "third")).error).toBeUndefined();
    await g.untilSettled("req-3");
    expect(await spend(g)).toMatchObject({ reservedMicros: 0, requests: 2 });
  });

  it("a request that fails before any token gives its reservation back and is charged nothing", async () => {
    const { g, principal } = await open(1);
    const { error } = await run(g, principal, "#sim fail=status status=503");
    expect(error?.code).toBe("upstream_unavailable");
    const record = await g.untilSettled("req-1");
    expect(record).toMatchObject({ outcome: "failed", code: "upstream_unavailable", costMicros: 0 });
    expect(await spend(g)).toMatchObject({ reservedMicros: 0, spendMicros: 0 });
  });

  it("a request that could cost more than the whole budget is refused before it reaches a provider", async () => {
    const { g, principal } = await open(0.005);
    const { error } = await run(g, principal, "hi");
    expect(error?.code).toBe("budget_exceeded");
    expect(error?.message).toBe("the request could cost more than key team's whole budget of 0.005 USD per day; lower max_tokens");
    expect(error?.budget).toEqual({ level: "key", httpStatus: 402 });
    expect(toOpenAiError(error).status).toBe(402);
    expect(g.sim.records.all()).toHaveLength(0);
    expect(await spend(g)).toMatchObject({ reservedMicros: 0, requests: 0 });
  });

  it("auth.budgetExceededStatus 429 keeps the status of old for callers that branch on it; the body says the same", async () => {
    const { g, principal } = await open(0.005, 429);
    const { error } = await run(g, principal, "hi");
    expect(error?.budget).toEqual({ level: "key", httpStatus: 429 });
    expect(toOpenAiError(error)).toMatchObject({ status: 429, headers: { "sluice-budget-level": "key" }, body: { error: { type: "insufficient_quota", code: "budget_exceeded" } } });
  });
});
