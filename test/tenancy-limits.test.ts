import { Code } from "@connectrpc/connect";
import OpenAI from "openai";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ErrorInfoSchema, QuotaFailureSchema, RetryInfoSchema } from "../gen/google/rpc/error_details_pb.js";
import { sha256Hex } from "../src/config/key-hash.js";
import { simulatedText } from "../src/simulator/text.js";
import { subjectOf } from "../src/store/tenant-store.js";
import { keyId } from "../src/tenancy/principal.js";
import { usdFromMicros } from "../src/tenancy/quota-headers.js";
import { tokenCounter } from "../src/usage/token-count.js";
import type { UsageRecord } from "../src/usage/usage-record.js";
import { chatClient, collect, rpcFailure, textOf, transports, userRequest } from "./helpers/clients.js";
import { baseUrlFor, type Harness, startHarness } from "./helpers/harness.js";
import { dropPrefix, dumpPrefix, SHARED_REDIS_URL, testPrefix, usageRecords } from "./helpers/redis.js";
import { tenancyEvents } from "./helpers/tenancy-events.js";

const KEYS = {
  rpm: "sk-test-rpm-7f3a9c2e5b1d4f60",
  tpm: "sk-test-tpm-2c8e4a6f0b9d1e37",
  budget: "sk-test-budget-9a1c3e5f7b2d4068",
  usage: "sk-test-usage-4e6a8c0b2d1f3957",
  held: "sk-test-held-5d7f9b1a3c2e4068",
};
/** USD per million tokens: 1,000 and 2,000 micro-dollars per token. */
const PRICE = { inputPerMTok: 1_000, outputPerMTok: 2_000 };
const IN_MICROS = 1_000;
const OUT_MICROS = 2_000;

const prefix = testPrefix("limits");
const events = tenancyEvents();
/** The store's clock (Redis's scripts use it instead of TIME): windows and periods move only when a test moves them. */
let clockMs = Date.UTC(2026, 4, 20, 12);
let h: Harness;

beforeAll(async () => {
  h = await startHarness({
    routing: (sim) => ({
      providers: { simulator: { kind: "openai", baseUrl: baseUrlFor(sim, "openai"), breaker: { failures: 10_000 } } },
      models: {
        sim: { provider: "simulator", model: "sim-1?tokens=3", price: PRICE },
        quiet: { provider: "simulator", model: "sim-1?tokens=5&usage=never", price: PRICE },
        long: { provider: "simulator", model: "sim-1?tokens=40", price: PRICE },
      },
    }),
    env: { RPM_KEY: KEYS.rpm, TPM_KEY: KEYS.tpm, BUDGET_KEY: KEYS.budget, USAGE_KEY: KEYS.usage, HELD_KEY: KEYS.held },
    auth: {
      keys: [
        { name: "rpm", keyEnv: "RPM_KEY", limits: { requestsPerMinute: 3 } },
        { name: "tpm", keyEnv: "TPM_KEY", limits: { tokensPerMinute: 1_000 } },
        { name: "budget", keyEnv: "BUDGET_KEY", budget: { usd: 0.05, period: "month" } },
        { name: "usage", keyEnv: "USAGE_KEY" },
        { name: "held", keyEnv: "HELD_KEY", budget: { usd: 0.05, period: "month" } },
      ],
    },
    // Fail closed with a long timeout: a slow moment on a loaded machine must fail the test loudly, never fall back quietly.
    store: { redis: { url: SHARED_REDIS_URL, prefix, failMode: "closed", timeoutMs: 5_000 } },
    storeClock: () => clockMs,
    observer: events.observer,
  });
});
afterAll(async () => {
  await h.close();
  await dropPrefix(prefix);
});

const bearer = (key: string) => ({ authorization: `Bearer ${key}` });
const grpcClient = () => chatClient(transports(h.url)["grpc (connect-node, h2)"]!);
let ids = 0;
const requestId = (name: string) => `${name}-${++ids}-${Date.now()}`;

async function chatCompletion(key: string, body: Record<string, unknown>, id = requestId("facade")) {
  const res = await fetch(`${h.url}/v1/chat/completions`, {
    method: "POST",
    headers: { "content-type": "application/json", ...bearer(key), "x-request-id": id },
    body: JSON.stringify({ messages: [{ role: "user", content: "hi" }], ...body }),
  });
  // biome-ignore lint/suspicious/noExplicitAny: a JSON body the assertions read by path
  return { res, id, json: (await res.json()) as Record<string, any> };
}

describe("requests per minute", () => {
  it("admits the limit, then RESOURCE_EXHAUSTED / 429 with Retry-After and the remaining quota on both edges", async () => {
    const headers: Array<Headers> = [];
    for (let i = 0; i < 2; i++) {
      await collect(grpcClient().streamChat(userRequest("sim", "hi"), { headers: bearer(KEYS.rpm), onHeader: (h) => headers.push(h) }));
    }
    expect(headers.map((h) => h.get("x-ratelimit-remaining-requests"))).toEqual(["2", "1"]);
    expect(headers[0]!.get("x-ratelimit-limit-requests")).toBe("3");
    expect(headers[0]!.get("x-ratelimit-reset-requests")).toBe("1m0s");

    const third = await chatCompletion(KEYS.rpm, { model: "sim" });
    expect(third.res.status).toBe(200);
    expect(third.res.headers.get("x-ratelimit-remaining-requests")).toBe("0");

    const refused = await chatCompletion(KEYS.rpm, { model: "sim" });
    expect(refused.res.status).toBe(429);
    expect(refused.json.error).toMatchObject({ code: "rate_limit_exceeded", type: "rate_limit_error" });
    expect(refused.json.error.message).toMatch(/key rpm is over its limit of 3 requests per minute/);
    expect(refused.res.headers.get("retry-after")).toBe("60");
    expect(refused.res.headers.get("x-ratelimit-remaining-requests")).toBe("0");

    const grpcRefused = await rpcFailure(collect(grpcClient().streamChat(userRequest("sim", "hi"), { headers: bearer(KEYS.rpm) })));
    expect(grpcRefused.code).toBe(Code.ResourceExhausted);
    expect(grpcRefused.findDetails(RetryInfoSchema)[0]?.retryDelay?.seconds).toBe(60n);
    expect(grpcRefused.metadata.get("x-ratelimit-remaining-requests")).toBe("0");

    // A minute later (the store's clock), the window has room again.
    clockMs += 60_000;
    expect((await chatCompletion(KEYS.rpm, { model: "sim" })).res.status).toBe(200);
  });
});

describe("tokens per minute: reserve, then reconcile", () => {
  it("refuses a request whose max_tokens alone exceeds the limit", async () => {
    const refused = await chatCompletion(KEYS.tpm, { model: "sim", max_tokens: 5_000 });
    expect(refused.res.status).toBe(429);
    expect(refused.json.error.message).toMatch(/reserves \d+ tokens .* more than key tpm's limit of 1000 tokens per minute; lower max_tokens/);
    expect(refused.json.error.param).toBe("max_tokens");
    expect(refused.res.headers.get("retry-after")).toBeNull();
  });

  it("reserves input and max_tokens at admission, and refunds what the answer did not use", async () => {
    const first = await chatCompletion(KEYS.tpm, { model: "sim", max_tokens: 500 });
    expect(first.res.status).toBe(200);
    const reservedLeft = Number(first.res.headers.get("x-ratelimit-remaining-tokens"));
    const used = (first.json.usage.prompt_tokens as number) + (first.json.usage.completion_tokens as number);
    const reservation = 1_000 - reservedLeft;
    expect(reservation).toBeGreaterThan(500);
    expect(used).toBeLessThan(reservation);
    await events.recorded(first.id);

    // The same request again: the first now counts what it used, not what it reserved.
    const second = await chatCompletion(KEYS.tpm, { model: "sim", max_tokens: 500 });
    expect(Number(second.res.headers.get("x-ratelimit-remaining-tokens"))).toBe(1_000 - used - reservation);
    await events.recorded(second.id);
    // One more that would fit an empty window, but not beside what was used: refused until the window moves.
    const third = await chatCompletion(KEYS.tpm, { model: "sim", max_tokens: 990 });
    expect(third.res.status).toBe(429);
    expect(Number(third.res.headers.get("retry-after"))).toBeGreaterThan(0);
  });
});

describe("budgets", () => {
  it("spends in integer micro-dollars until the budget is used, then 402 budget_exceeded until the next period", async () => {
    let spent = 0;
    let admitted = 0;
    let refusal: Awaited<ReturnType<typeof chatCompletion>> | undefined;
    for (let i = 0; i < 20 && !refusal; i++) {
      const r = await chatCompletion(KEYS.budget, { model: "sim", max_tokens: 5 });
      if (r.res.status !== 200) {
        refusal = r;
        break;
      }
      admitted++;
      const record = await events.recorded(r.id);
      expect(record.costMicros).toBe(record.inputTokens * IN_MICROS + record.outputTokens * OUT_MICROS);
      spent += record.costMicros;
    }
    expect(admitted).toBeGreaterThan(1);
    expect(refusal?.res.status).toBe(402);
    expect(refusal?.json.error).toMatchObject({ code: "budget_exceeded", type: "insufficient_quota", param: null });
    expect(refusal?.res.headers.get("sluice-budget-level")).toBe("key");
    expect(refusal?.res.headers.get("sluice-budget-reset")).toMatch(/^((\d+d)?(\d+h)?\d+m\d+s|[\d.]+m?s)$/);
    expect(refusal?.json.error.message).toMatch(
      new RegExp(`key budget cannot reserve [0-9.]+ USD for this request: it has spent ${usdFromMicros(spent).replace(".", "\\.")} USD of its budget of 0\\.05 USD for this month, and no stream in flight holds any of it \\(it renews in`),
    );
    expect(Number(refusal?.res.headers.get("retry-after"))).toBe(Math.ceil((Date.UTC(2026, 5, 1) - clockMs) / 1000));
    const remaining = Math.round(Number(refusal?.res.headers.get("sluice-budget-remaining-usd")) * 1e6);
    expect(spent).toBeLessThanOrEqual(50_000);
    // What is left is less than the most the next request could cost.
    expect(remaining).toBe(50_000 - spent);
    const usage = await h.sluice.tenancy.store.usage(subjectOf({ level: "key", id: keyId(sha256Hex(KEYS.budget)) }), "month");
    expect(usage).toMatchObject({ requests: admitted, spendMicros: spent, reservedMicros: 0 });

    // The official SDK does not retry a 402 (it would retry a 429): it sends the request once.
    let sent = 0;
    const counting: typeof fetch = (input, init) => {
      sent++;
      return fetch(input, init);
    };
    const sdk = new OpenAI({ baseURL: `${h.url}/v1`, apiKey: KEYS.budget, maxRetries: 2, fetch: counting });
    const sdkError = await sdk.chat.completions.create({ model: "sim", max_tokens: 5, messages: [{ role: "user", content: "hi" }] }).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(sdkError).toBeInstanceOf(OpenAI.APIError);
    expect(sdkError).toMatchObject({ status: 402, code: "budget_exceeded", type: "insufficient_quota" });
    expect(sent).toBe(1);

    // gRPC: RESOURCE_EXHAUSTED with the reason, the level, the quota that failed, and a retry no sooner than June.
    const small = userRequest("sim", "hi", { sampling: { maxTokens: 5 } });
    const grpcRefused = await rpcFailure(collect(grpcClient().streamChat(small, { headers: bearer(KEYS.budget) })));
    expect(grpcRefused.code).toBe(Code.ResourceExhausted);
    expect(grpcRefused.message).toMatch(/key budget cannot reserve/);
    expect(grpcRefused.findDetails(ErrorInfoSchema)[0]).toMatchObject({ reason: "BUDGET_EXCEEDED", domain: "sluice", metadata: { level: "key" } });
    expect(grpcRefused.findDetails(QuotaFailureSchema)[0]?.violations[0]).toMatchObject({ subject: "key" });
    expect(Number(grpcRefused.findDetails(RetryInfoSchema)[0]?.retryDelay?.seconds)).toBe(Math.floor((Date.UTC(2026, 5, 1) - clockMs) / 1000));
    expect(grpcRefused.metadata.get("sluice-budget-level")).toBe("key");

    // June: a new budget.
    const june = clockMs;
    clockMs = Date.UTC(2026, 5, 1, 0, 0, 1);
    try {
      expect((await chatCompletion(KEYS.budget, { model: "sim", max_tokens: 5 })).res.status).toBe(200);
    } finally {
      clockMs = june;
    }
  });
});

describe("a budget refusal while streams are in flight", () => {
  it("says what was spent and what running streams hold, apart", async () => {
    // A stream that reserves most of the budget (its prompt estimate, and max_tokens 10 at 2,000 micro-dollars each) and holds after one token.
    const tag = `held-${Date.now()}`;
    const heldId = requestId("held");
    const held = fetch(`${h.url}/v1/chat/completions`, {
      method: "POST",
      headers: { "content-type": "application/json", ...bearer(KEYS.held), "x-request-id": heldId },
      body: JSON.stringify({ model: "sim", max_tokens: 10, stream: true, messages: [{ role: "user", content: `#sim tokens=3 hold_at=1 tag=${tag}` }] }),
    });
    await h.sim.records.waitFor((r) => r.tag === tag && r.heldAt !== undefined, 30_000);
    try {
      const refused = await chatCompletion(KEYS.held, { model: "sim", max_tokens: 10 });
      expect(refused.res.status).toBe(402);
      const message = String(refused.json.error.message);
      const reserved = /streams in flight hold ([0-9.]+) USD more/.exec(message);
      expect(message).toMatch(/key held cannot reserve [0-9.]+ USD for this request: it has spent 0 USD of its budget of 0\.05 USD for this month, and streams in flight hold/);
      // What the held stream reserved: its prompt estimate and 10 output tokens, priced.
      expect(Number(reserved?.[1])).toBeGreaterThanOrEqual((10 * OUT_MICROS) / 1e6);
      expect(Number(reserved?.[1])).toBeLessThan(0.05);
    } finally {
      h.sim.records.release(tag);
    }
    const first = await held;
    expect(first.status).toBe(200);
    expect(await first.text()).toContain("data: [DONE]");
    await events.recorded(heldId);
  });
});

describe("usage records", () => {
  const stored = async (id: string): Promise<UsageRecord> => {
    await events.recorded(id);
    const found = (await usageRecords(prefix)).find((r) => r.requestId === id);
    if (!found) throw new Error(`no record for ${id} in Redis`);
    return found;
  };
  const prompt = async (text: string) => (await tokenCounter())(text) + 4 + 3;

  it("a completed stream: the provider's usage, its cost, TTFT and duration", async () => {
    const id = requestId("complete");
    const messages = await collect(grpcClient().streamChat(userRequest("sim", "hello there"), { headers: { ...bearer(KEYS.usage), "x-request-id": id } }));
    const usage = messages.find((m) => m.delta.case === "usage")!.delta.value as { inputTokens: bigint; outputTokens: bigint; estimated: boolean };
    expect(usage.estimated).toBe(false);
    const record = await stored(id);
    expect(record).toMatchObject({
      key: "usage",
      alias: "sim",
      target: "simulator/sim-1?tokens=3",
      inputTokens: Number(usage.inputTokens),
      outputTokens: Number(usage.outputTokens),
      costMicros: Number(usage.inputTokens) * IN_MICROS + Number(usage.outputTokens) * OUT_MICROS,
      estimated: false,
      outcome: "completed",
    });
    expect(record.ttftMs).toBeGreaterThan(0);
    expect(record.durationMs).toBeGreaterThanOrEqual(record.ttftMs!);
  });

  it("a provider that reports no usage: counted with the tokenizer, marked estimated on the delta and the record, on both edges", async () => {
    const id = requestId("quiet");
    const messages = await collect(grpcClient().streamChat(userRequest("quiet", "count me"), { headers: { ...bearer(KEYS.usage), "x-request-id": id } }));
    const usage = messages.find((m) => m.delta.case === "usage")!.delta.value as { inputTokens: bigint; outputTokens: bigint; estimated: boolean };
    expect(usage.estimated).toBe(true);
    expect(Number(usage.outputTokens)).toBe((await tokenCounter())(textOf(messages)));
    expect(Number(usage.inputTokens)).toBe(await prompt("count me"));
    expect(messages.findIndex((m) => m.delta.case === "usage")).toBe(messages.length - 2);
    expect(await stored(id)).toMatchObject({ estimated: true, inputTokens: Number(usage.inputTokens), outputTokens: Number(usage.outputTokens), outcome: "completed" });

    const facade = await chatCompletion(KEYS.usage, { model: "quiet", stream: false });
    expect(facade.json.usage).toMatchObject({ completion_tokens: Number(usage.outputTokens), estimated: true });
  });

  it("a cancelled stream is charged for what the upstream produced", async () => {
    const id = requestId("cancel");
    const tag = id;
    const abort = new AbortController();
    let text = "";
    try {
      for await (const m of grpcClient().streamChat(userRequest("long", `#sim hold_at=3 tag=${tag}`), { headers: { ...bearer(KEYS.usage), "x-request-id": id }, signal: abort.signal })) {
        if (m.delta.case === "text") {
          text += m.delta.value.text;
          // Three tokens, in however many messages (the edge joins text that arrived together).
          if (text === simulatedText(1, 3)) abort.abort();
        }
      }
    } catch {
      // our own abort
    }
    await h.sim.records.waitFor((r) => r.tag === tag && r.endedAt !== undefined, 30_000);
    const record = await stored(id);
    expect(record).toMatchObject({
      outcome: "canceled",
      code: "canceled",
      estimated: true,
      target: "simulator/sim-1?tokens=40",
      outputTokens: (await tokenCounter())(text),
      inputTokens: await prompt(`#sim hold_at=3 tag=${tag}`),
    });
    expect(record.costMicros).toBe(record.inputTokens * IN_MICROS + record.outputTokens * OUT_MICROS);
  });

  it("a stream that fails mid-way is charged for what arrived; one that fails before any delta for nothing", async () => {
    const id = requestId("midway");
    let text = "";
    const error = await rpcFailure(
      (async () => {
        for await (const m of grpcClient().streamChat(userRequest("long", "#sim fail=drop fail_at=4"), { headers: { ...bearer(KEYS.usage), "x-request-id": id } })) {
          if (m.delta.case === "text") text += m.delta.value.text;
        }
      })(),
    );
    expect(error.code).toBe(Code.Unavailable);
    expect(text).not.toBe("");
    expect(await stored(id)).toMatchObject({ outcome: "failed", code: "upstream_unavailable", estimated: true, outputTokens: (await tokenCounter())(text) });

    const early = requestId("early");
    await rpcFailure(collect(grpcClient().streamChat(userRequest("sim", "#sim fail=status status=500"), { headers: { ...bearer(KEYS.usage), "x-request-id": early } })));
    expect(await stored(early)).toMatchObject({ outcome: "failed", code: "upstream_unavailable", target: "", inputTokens: 0, outputTokens: 0, costMicros: 0, estimated: false });
  });

  it("holds no key in Redis: only names and hashes", async () => {
    const everything = await dumpPrefix(prefix);
    expect(everything).toContain("usage");
    for (const key of Object.values(KEYS)) expect(everything).not.toContain(key);
    for (const key of Object.values(KEYS)) expect(h.logText()).not.toContain(key);
  });
});
