import { Code, ConnectError } from "@connectrpc/connect";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { CAP_CHARS_PER_TOKEN, CAP_MARGIN_CHARS } from "../src/pipeline/output-guard.js";
import { simulatedText } from "../src/simulator/text.js";
import { tokenCounter } from "../src/usage/token-count.js";
import { adminClient } from "./helpers/admin.js";
import { chatClient, collect, textOf, transports, unary, userRequest } from "./helpers/clients.js";
import { FAR_TIMEOUTS, type Harness, startHarness } from "./helpers/harness.js";
import { type OwnDatabase, ownDatabase } from "./helpers/postgres.js";
import { scrape } from "./helpers/prometheus.js";
import { tenancyEvents } from "./helpers/tenancy-events.js";

/**
 * An upstream that ignores max_tokens (the simulator with ignore_max_tokens=1 writes `tokens`
 * whatever the request says) meets a gateway that enforces what the
 * request reserved: the answer is cut with finish `length`, the upstream is
 * closed, what was delivered is charged, and the cut is counted and audited.
 */
const KEYS = { capped: "sk-test-limits-capped-3c5e7a9b1d0f2468", budget: "sk-test-limits-budget-8a0c2e4f6b1d3957" };
const ADMIN_KEY = "sk-test-limits-admin-5d7f9b1a3c2e4068";
/** 1,000 USD per million output tokens: a thousandth of a dollar a token, so a budget of 2 USD buys about 2,000. */
const PRICE = { inputPerMTok: 1, outputPerMTok: 1_000 };
const BUDGET_USD = 2;
/** Small enough that a long answer passes it in a moment; the answers of the max_tokens tests stay far below it. */
const MAX_ANSWER_BYTES = 64 * 1024;

const events = tenancyEvents();
let h: Harness;
let db: OwnDatabase;
let ids = 0;

beforeAll(async () => {
  // The audit log on a real server: the embedded PGlite takes longer to open than a test may wait on a loaded machine.
  db = await ownDatabase();
  h = await startHarness({
    routing: (sim) => ({
      providers: { sim: { kind: "openai", baseUrl: sim.openAiBaseUrl, breaker: { failures: 10_000 }, timeouts: FAR_TIMEOUTS } },
      models: {
        sim: { provider: "sim", model: "sim-1?ignore_max_tokens=1", price: PRICE },
        recorded: { provider: "sim", model: "sim-1?ignore_max_tokens=1", record: { sampleRate: 1, maxPerDay: 10_000 } },
      },
    }),
    env: { CAPPED_KEY: KEYS.capped, BUDGET_KEY: KEYS.budget, ADMIN_KEY },
    auth: {
      adminKeyEnv: "ADMIN_KEY",
      keys: [
        { name: "capped", keyEnv: "CAPPED_KEY" },
        { name: "budgeted", keyEnv: "BUDGET_KEY", budget: { usd: BUDGET_USD, period: "month" } },
      ],
    },
    store: { postgres: { url: db.url, poolSize: 2 } },
    limits: { maxAnswerBytes: MAX_ANSWER_BYTES },
    compliance: { audit: { flushMs: 60_000 } },
    observer: events.observer,
  });
});
afterAll(async () => {
  await h?.close();
  await db?.drop();
});

const grpc = () => chatClient(transports(h.url)["grpc (connect-node, h2)"]!);
const headers = (key: string, requestId: string) => ({ authorization: `Bearer ${key}`, "x-request-id": requestId });

async function cuts(reason: string): Promise<number> {
  const metrics = await scrape(`${h.url}/metrics`);
  const family = metrics.families.find((f) => f.name === "sluice_streams_cut_total");
  return (family?.metrics ?? []).filter((m) => m.labels?.sluice_cut_reason === reason).reduce((sum, m) => sum + Number(m.value), 0);
}

async function auditedCut(requestId: string) {
  await h.sluice.audit!.flush();
  const { events: audited } = await adminClient(h.url, ADMIN_KEY).listAuditEvents({ pageSize: 100 });
  return audited.find((e) => e.action === "stream.cut" && e.requestId === requestId);
}

describe("an upstream that ignores max_tokens", () => {
  it("is cut at the request's max_tokens with finish length; the upstream is closed, what was delivered is charged, counted and audited", async () => {
    const requestId = `capped-${++ids}`;
    const tag = "limits-capped";
    const messages = await collect(grpc().streamChat(userRequest("sim", `#sim tokens=200000 tag=${tag}`, { sampling: { maxTokens: 50 } }), { headers: headers(KEYS.capped, requestId) }));
    const text = textOf(messages);
    expect(messages.at(-1)!.delta.case).toBe("finish");
    expect(messages.at(-1)!.delta.value).toMatchObject({ reason: 2 /* FINISH_REASON_LENGTH */ });
    // Cut within the guard's bound, and what came is the upstream's answer from its start.
    expect(text.length).toBeLessThanOrEqual(50 * CAP_CHARS_PER_TOKEN + CAP_MARGIN_CHARS);
    expect(text.length).toBeGreaterThan(0);
    expect(simulatedText(1, 2_000).startsWith(text)).toBe(true);
    const record = await h.sim.records.waitFor((r) => r.tag === tag && r.endedAt !== undefined, 30_000);
    expect(record.outcome).toBe("client_closed");
    expect(record.tokensWritten).toBeLessThan(200_000);
    // Charged for what the client got, counted by the tokenizer.
    const usage = await events.recorded(requestId);
    expect(usage.outcome).toBe("completed");
    expect(usage.outputTokens).toBe((await tokenCounter())(text));
    expect(await cuts("max_tokens")).toBeGreaterThanOrEqual(1);
    expect(await auditedCut(requestId)).toMatchObject({ actor: { kind: "key", id: expect.stringMatching(/^[0-9a-f]{12}$/) }, target: "sim", outcome: "refused", details: expect.objectContaining({ key: "capped" }) });
    expect((await h.waitForLog((l) => l.event === "access" && l.requestId === requestId)).cut).toBe("max_tokens");
  });

  it("is not cut when it stops at max_tokens itself", async () => {
    const messages = await collect(grpc().streamChat(userRequest("sim", "#sim tokens=50", { sampling: { maxTokens: 50 } }), { headers: headers(KEYS.capped, `honest-${++ids}`) }));
    expect(textOf(messages)).toBe(simulatedText(1, 50));
    expect(messages.at(-1)!.delta.value).toMatchObject({ reason: 1 /* FINISH_REASON_STOP */ });
  });

  it("is cut on the Chat Completions edge too, as finish_reason length", async () => {
    const res = await fetch(`${h.url}/v1/chat/completions`, {
      method: "POST",
      headers: { "content-type": "application/json", ...headers(KEYS.capped, `facade-${++ids}`) },
      body: JSON.stringify({ model: "sim", max_tokens: 20, messages: [{ role: "user", content: "#sim tokens=200000" }] }),
    });
    expect(res.status).toBe(200);
    const body = (await res.json()) as { choices: Array<{ finish_reason: string; message: { content: string } }> };
    expect(body.choices[0]!.finish_reason).toBe("length");
    expect(body.choices[0]!.message.content.length).toBeLessThanOrEqual(20 * CAP_CHARS_PER_TOKEN + CAP_MARGIN_CHARS);
  });
});

describe("an answer that would spend past its key's budget", () => {
  it("is cut once its running cost passes the reservation plus what is left of the budget; the spend stays within the budget", async () => {
    const requestId = `budget-${++ids}`;
    const tag = "limits-budget";
    // No max_tokens: the reservation is the default 1,024 output tokens, and nothing but the budget bounds the answer.
    const messages = await collect(grpc().streamChat(userRequest("sim", `#sim tokens=200000 tag=${tag}`), { headers: headers(KEYS.budget, requestId) }));
    expect(messages.at(-1)!.delta.value).toMatchObject({ reason: 2 /* FINISH_REASON_LENGTH */ });
    const record = await h.sim.records.waitFor((r) => r.tag === tag && r.endedAt !== undefined, 30_000);
    expect(record.outcome).toBe("client_closed");
    const usage = await events.recorded(requestId);
    expect(usage.outputTokens).toBe((await tokenCounter())(textOf(messages)));
    expect(usage.costMicros).toBeLessThanOrEqual(BUDGET_USD * 1_000_000);
    // More than the reservation: the cut is at the budget, not at the reservation.
    expect(usage.outputTokens).toBeGreaterThan(1_024);
    expect(await cuts("budget")).toBeGreaterThanOrEqual(1);
    expect(await auditedCut(requestId)).toMatchObject({ actor: { kind: "key", id: expect.stringMatching(/^[0-9a-f]{12}$/) }, details: expect.objectContaining({ key: "budgeted", reason: "budget" }) });
    const spent = await adminClient(h.url, ADMIN_KEY).getUsage({ name: "budgeted" });
    expect(spent.reservedUsdMicros).toBe(0n);
    expect(spent.spendUsdMicros).toBeLessThanOrEqual(BigInt(BUDGET_USD * 1_000_000));
  });
});

describe("an answer held whole in memory", () => {
  it("a non-streamed answer past limits.maxAnswerBytes: 502 naming the setting, and the upstream is closed (Chat Completions)", async () => {
    const tag = "limits-whole-facade";
    const requestId = `whole-${++ids}`;
    const res = await fetch(`${h.url}/v1/chat/completions`, {
      method: "POST",
      headers: { "content-type": "application/json", ...headers(KEYS.capped, requestId) },
      body: JSON.stringify({ model: "sim", messages: [{ role: "user", content: `#sim tokens=200000 tag=${tag}` }] }),
    });
    expect(res.status).toBe(502);
    const body = (await res.json()) as { error: { message: string } };
    expect(body.error.message).toContain("limits.maxAnswerBytes");
    const record = await h.sim.records.waitFor((r) => r.tag === tag && r.endedAt !== undefined, 30_000);
    expect(record.outcome).toBe("client_closed");
    expect(record.tokensWritten).toBeLessThan(200_000);
    expect((await events.recorded(requestId)).outcome).toBe("failed");
  });

  it("the same on gRPC's unary Chat: INTERNAL naming the setting", async () => {
    const tag = "limits-whole-grpc";
    const error = await grpc()
      .chat(unary(userRequest("sim", `#sim tokens=200000 tag=${tag}`)), { headers: headers(KEYS.capped, `whole-${++ids}`) })
      .then(
        () => undefined,
        (e: unknown) => ConnectError.from(e),
      );
    expect(error?.code).toBe(Code.Internal);
    expect(error?.rawMessage).toContain("limits.maxAnswerBytes");
    expect((await h.sim.records.waitFor((r) => r.tag === tag && r.endedAt !== undefined, 30_000)).outcome).toBe("client_closed");
  });

  it("an answer under the bound is served whole as before", async () => {
    const res = await grpc().chat(unary(userRequest("sim", "#sim tokens=30")), { headers: headers(KEYS.capped, `whole-${++ids}`) });
    expect(res.text).toBe(simulatedText(1, 30));
  });

  it("a recorded call whose answer passes the bound streams whole to its client; the recording is dropped and counted", async () => {
    const recordings = async (result: string) => {
      const metrics = await scrape(`${h.url}/metrics`);
      const family = metrics.families.find((f) => f.name === "sluice_recordings_total");
      return (family?.metrics ?? []).filter((m) => m.labels?.sluice_recording_result === result).reduce((sum, m) => sum + Number(m.value), 0);
    };
    const long = await collect(grpc().streamChat(userRequest("recorded", "#sim tokens=12000 token_chars=10"), { headers: headers(KEYS.capped, `recorded-${++ids}`) }));
    expect(textOf(long).length).toBeGreaterThan(MAX_ANSWER_BYTES);
    expect(long.at(-1)!.delta.value).toMatchObject({ reason: 1 /* FINISH_REASON_STOP */ });
    await h.waitForLog((l) => l.event === "recording.too_large");
    expect(await recordings("too_large")).toBe(1);
    await collect(grpc().streamChat(userRequest("recorded", "#sim tokens=10"), { headers: headers(KEYS.capped, `recorded-${++ids}`) }));
    await h.sluice.recorder.flush();
    expect(await recordings("written")).toBe(1);
  });
});
