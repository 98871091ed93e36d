import Anthropic from "@anthropic-ai/sdk";
import { describe, expect, it } from "vitest";
import { countTokensResponse } from "../../src/edges/anthropic/count-tokens.js";
import { countTokensRequestFrom } from "../../src/edges/anthropic/from-anthropic.js";
import { IMAGE_TOKENS, TOKENS_PER_MESSAGE, TOKENS_PER_REQUEST } from "../../src/usage/prompt-size.js";
import { tokenCounter } from "../../src/usage/token-count.js";
import { createUsageMeter } from "../../src/usage/usage-meter.js";

const LIMITS = { maxRequestElements: 10_000, maxJsonDepth: 32 };
const PROMPT = {
  model: "claude",
  system: "Answer in one word.",
  messages: [{ role: "user", content: "What colour is the sky on a clear day?" }],
  tools: [{ name: "lookup", description: "Look a fact up", input_schema: { type: "object", properties: { q: { type: "string" } } } }],
};

describe("count_tokens", () => {
  it("counts text, tools and framing with the gateway's tokenizer", async () => {
    const count = await tokenCounter();
    const texts = [PROMPT.system, PROMPT.messages[0]!.content, "lookup", "Look a fact up", JSON.stringify(PROMPT.tools[0]!.input_schema)];
    const expected = TOKENS_PER_REQUEST + 2 * TOKENS_PER_MESSAGE + texts.reduce((sum, t) => sum + count(t), 0);
    expect(await countTokensResponse(countTokensRequestFrom(PROMPT, LIMITS))).toEqual({ input_tokens: expected });
  });

  it("counts an image at the flat rate", async () => {
    const image = { type: "image", source: { type: "url", url: "https://example.test/sky.png" } };
    const withImage = { ...PROMPT, messages: [{ role: "user", content: [{ type: "text", text: PROMPT.messages[0]!.content }, image] }] };
    const [plain, pictured] = await Promise.all([PROMPT, withImage].map((p) => countTokensResponse(countTokensRequestFrom(p, LIMITS))));
    expect(pictured!.input_tokens - plain!.input_tokens).toBe(IMAGE_TOKENS);
  });

  it("is the input count the gateway charges when a provider reports no usage", async () => {
    const request = countTokensRequestFrom(PROMPT, LIMITS);
    const meter = createUsageMeter(request);
    meter.observe({ type: "text", text: "Blue." });
    const estimate = await meter.estimateIfMissing();
    expect(estimate?.inputTokens).toBe((await countTokensResponse(request)).input_tokens);
  });

  it("is what the official SDK's countTokens returns", async () => {
    let sent: unknown;
    const client = new Anthropic({
      apiKey: "k",
      baseURL: "http://sluice.test",
      maxRetries: 0,
      fetch: async (_url, init) => {
        sent = JSON.parse(String(init?.body));
        const answer = await countTokensResponse(countTokensRequestFrom(sent, LIMITS));
        return new Response(JSON.stringify(answer), { headers: { "content-type": "application/json" } });
      },
    });
    const counted = await client.messages.countTokens({ model: "claude", messages: [{ role: "user", content: "hi" }] });
    expect(sent).toEqual({ model: "claude", messages: [{ role: "user", content: "hi" }] });
    expect(counted).toEqual({ input_tokens: TOKENS_PER_REQUEST + TOKENS_PER_MESSAGE + 1 });
  });
});
