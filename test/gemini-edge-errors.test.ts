import { GoogleGenAI } from "@google/genai";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { baseUrlFor, type Harness, startHarness } from "./helpers/harness.js";

/**
 * Failures on the Gemini edge, each in Google's shape and status: an
 * upstream's 429, a spent budget (402), and a failure after the stream
 * began, which must end both stream forms with an error a client can
 * read instead of a clean end.
 */

const BUDGET_KEY = "sk-test-gemini-budget-2b4d6f8a0c1e3957";
const KEY = "sk-test-gemini-errors-7c9e1a3b5d0f2468";
const PRICE = { inputPerMTok: 1_000, outputPerMTok: 2_000 };

let h: Harness;
beforeAll(async () => {
  h = await startHarness({
    routing: (sim) => ({
      providers: { simulator: { kind: "openai", baseUrl: baseUrlFor(sim, "openai"), breaker: { failures: 10_000 } } },
      models: { sim: { provider: "simulator", model: "sim-1?tokens=8&delay_ms=1", price: PRICE } },
    }),
    env: { GEMINI_BUDGET_KEY: BUDGET_KEY, GEMINI_KEY: KEY },
    auth: {
      keys: [
        { name: "small-budget", keyEnv: "GEMINI_BUDGET_KEY", budget: { usd: 0.05, period: "month" } },
        { name: "caller", keyEnv: "GEMINI_KEY" },
      ],
    },
  });
});
afterAll(() => h.close());

const body = (prompt: string) => JSON.stringify({ contents: [{ role: "user", parts: [{ text: prompt }] }], generationConfig: { maxOutputTokens: 5 } });
const post = (path: string, prompt: string, key = KEY) => fetch(`${h.url}${path}`, { method: "POST", headers: { "content-type": "application/json", "x-goog-api-key": key }, body: body(prompt) });

describe("failures in Google's shape", () => {
  it("an upstream 429 is 429 RESOURCE_EXHAUSTED with Retry-After", async () => {
    const response = await post("/v1beta/models/sim:generateContent", "#sim fail=status status=429 retry_after=7");
    expect(response.status).toBe(429);
    expect(response.headers.get("retry-after")).toBe("7");
    expect(((await response.json()) as { error: unknown }).error).toMatchObject({ code: 429, status: "RESOURCE_EXHAUSTED" });
  });

  it("a failure after the first chunk ends the SSE stream with an error chunk and no finishReason", async () => {
    const response = await post("/v1beta/models/sim:streamGenerateContent?alt=sse", "#sim fail=reset fail_at=3");
    expect(response.status).toBe(200);
    // The last event, then the same error bare (for the genai SDK, which reads no error event).
    const text = await response.text();
    expect(text.endsWith('"status":"UNAVAILABLE"}}')).toBe(true);
    const events = text
      .split("\r\n\r\n")
      .filter((e) => e.startsWith("data: "))
      .map((e) => JSON.parse(e.slice(6)) as { error?: { status: string }; candidates?: Array<{ finishReason?: string }> });
    expect(events.length).toBeGreaterThan(1);
    expect(events.at(-1)!.error).toMatchObject({ status: "UNAVAILABLE" });
    expect(events.some((e) => e.candidates?.[0]?.finishReason)).toBe(false);
  });

  it("a failure after the first chunk closes the JSON array with an error element (still valid JSON)", async () => {
    const response = await post("/v1beta/models/sim:streamGenerateContent", "#sim fail=reset fail_at=3");
    expect(response.status).toBe(200);
    const elements = JSON.parse(await response.text()) as Array<{ error?: { code: number; status: string } }>;
    expect(elements.length).toBeGreaterThan(1);
    expect(elements.at(-1)!.error).toMatchObject({ code: 502, status: "UNAVAILABLE" });
  });

  it("the SDK raises on a failed stream rather than returning a truncated answer as whole", async () => {
    const ai = new GoogleGenAI({ apiKey: KEY, httpOptions: { baseUrl: h.url } });
    const read = async () => {
      let text = "";
      for await (const chunk of await ai.models.generateContentStream({ model: "sim", contents: "#sim fail=status status=503" })) text += chunk.text ?? "";
      return text;
    };
    await expect(read()).rejects.toThrow(/UNAVAILABLE/);
  });

  it("the SDK raises on a stream that fails after its first chunk, having yielded the text before", async () => {
    const ai = new GoogleGenAI({ apiKey: KEY, httpOptions: { baseUrl: h.url } });
    let text = "";
    const read = async () => {
      for await (const chunk of await ai.models.generateContentStream({ model: "sim", contents: "#sim fail=reset fail_at=3" })) text += chunk.text ?? "";
    };
    await expect(read()).rejects.toThrow();
    expect(text).not.toBe("");
  });

  it("a spent budget is 402 RESOURCE_EXHAUSTED with the budget's level, sent once by the SDK", async () => {
    let status = 200;
    for (let i = 0; i < 50 && status === 200; i++) status = (await post("/v1beta/models/sim:generateContent", "hi", BUDGET_KEY)).status;
    const refused = await post("/v1beta/models/sim:generateContent", "hi", BUDGET_KEY);
    expect(refused.status).toBe(402);
    expect(refused.headers.get("sluice-budget-level")).toBe("key");
    expect(((await refused.json()) as { error: unknown }).error).toMatchObject({ code: 402, status: "RESOURCE_EXHAUSTED" });
    let sent = 0;
    const original = globalThis.fetch;
    const counting: typeof fetch = (input, init) => {
      sent++;
      return original(input, init);
    };
    const ai = new GoogleGenAI({ apiKey: BUDGET_KEY, httpOptions: { baseUrl: h.url } });
    globalThis.fetch = counting;
    try {
      await expect(ai.models.generateContent({ model: "sim", contents: "hi", config: { maxOutputTokens: 5 } })).rejects.toThrow(/RESOURCE_EXHAUSTED/);
    } finally {
      globalThis.fetch = original;
    }
    expect(sent).toBe(1);
  });
});
