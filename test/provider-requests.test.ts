import { describe, expect, it } from "vitest";
import { resolveConfig } from "../src/config/config.js";
import type { ChatRequest } from "../src/core/chat-request.js";
import { ANTHROPIC_DEFAULT_MAX_TOKENS, anthropicRequestBody, buildAnthropicRequest } from "../src/providers/anthropic/anthropic-request.js";
import { buildGeminiRequest, geminiRequestBody } from "../src/providers/gemini/gemini-request.js";
import { openAiRequestBody } from "../src/providers/openai/openai-request.js";

const conversation: ChatRequest = {
  model: "alias",
  messages: [
    { role: "system", content: [{ type: "text", text: "Be brief." }] },
    {
      role: "user",
      content: [
        { type: "text", text: "What is here?" },
        { type: "image_url", url: "data:image/png;base64,iVBORw0K" },
      ],
    },
    { role: "assistant", content: [], toolCalls: [{ id: "call_1", name: "lookup", arguments: '{"q":"x"}' }] },
    { role: "tool", toolCallId: "call_1", content: [{ type: "text", text: '{"found":true}' }] },
  ],
  tools: [{ name: "lookup", description: "Look things up", parameters: { type: "object", properties: { q: { type: "string" } } } }],
  toolChoice: { type: "function", name: "lookup" },
  sampling: { temperature: 0.2, topP: 0.9, stop: ["END"], seed: 3 },
  metadata: { userId: "u-1", labels: {} },
};

function target(kind: "anthropic" | "gemini", key: string) {
  const config = resolveConfig({ providers: { p: { kind, baseUrl: "https://example.test/v1", apiKeyEnv: "K" } }, models: { m: { provider: "p", model: "model-1" } } }, { K: key });
  return { provider: config.providers.get("p")!, model: "model-1" };
}

describe("Anthropic request", () => {
  it("lifts system prompts out, translates images, tool calls, tool results, tools and tool choice", () => {
    expect(anthropicRequestBody(conversation, "claude-x")).toEqual({
      model: "claude-x",
      max_tokens: ANTHROPIC_DEFAULT_MAX_TOKENS,
      stream: true,
      system: "Be brief.",
      messages: [
        {
          role: "user",
          content: [
            { type: "text", text: "What is here?" },
            { type: "image", source: { type: "base64", media_type: "image/png", data: "iVBORw0K" } },
          ],
        },
        { role: "assistant", content: [{ type: "tool_use", id: "call_1", name: "lookup", input: { q: "x" } }] },
        { role: "user", content: [{ type: "tool_result", tool_use_id: "call_1", content: '{"found":true}' }] },
      ],
      tools: [{ name: "lookup", description: "Look things up", input_schema: conversation.tools[0]!.parameters }],
      tool_choice: { type: "tool", name: "lookup" },
      temperature: 0.2,
      top_p: 0.9,
      stop_sequences: ["END"],
      metadata: { user_id: "u-1" },
    });
  });

  it("sends the key as x-api-key with the API version, to /messages", () => {
    const req = buildAnthropicRequest(conversation, target("anthropic", "sk-ant-secret"));
    expect(req.url).toBe("https://example.test/v1/messages");
    expect(req.headers).toMatchObject({ "x-api-key": "sk-ant-secret", "anthropic-version": "2023-06-01" });
    expect(req.headers).not.toHaveProperty("authorization");
  });

  it("rejects replayed tool arguments that are not a JSON object", () => {
    const bad: ChatRequest = { ...conversation, messages: [{ role: "assistant", content: [], toolCalls: [{ id: "c", name: "f", arguments: "[1]" }] }] };
    expect(() => anthropicRequestBody(bad, "m")).toThrow(expect.objectContaining({ code: "invalid_request", field: "messages[0].tool_calls[0].arguments" }));
  });
});

describe("Gemini request", () => {
  it("uses systemInstruction, model role, functionCall/functionResponse by name, declarations and toolConfig", () => {
    expect(geminiRequestBody(conversation)).toEqual({
      contents: [
        { role: "user", parts: [{ text: "What is here?" }, { inlineData: { mimeType: "image/png", data: "iVBORw0K" } }] },
        { role: "model", parts: [{ functionCall: { name: "lookup", args: { q: "x" } } }] },
        { role: "user", parts: [{ functionResponse: { name: "lookup", response: { found: true } } }] },
      ],
      systemInstruction: { parts: [{ text: "Be brief." }] },
      tools: [{ functionDeclarations: [{ name: "lookup", description: "Look things up", parameters: conversation.tools[0]!.parameters }] }],
      toolConfig: { functionCallingConfig: { mode: "ANY", allowedFunctionNames: ["lookup"] } },
      generationConfig: { temperature: 0.2, topP: 0.9, stopSequences: ["END"], seed: 3 },
    });
  });

  it("streams with alt=sse and sends the key in x-goog-api-key, never in the URL", () => {
    const req = buildGeminiRequest(conversation, target("gemini", "AIzaSecretKey123"));
    expect(req.url).toBe("https://example.test/v1/models/model-1:streamGenerateContent?alt=sse");
    expect(req.url).not.toContain("AIza");
    expect(req.headers["x-goog-api-key"]).toBe("AIzaSecretKey123");
  });

  it("a tool result whose call is unknown is a client error naming the field", () => {
    const bad: ChatRequest = { ...conversation, messages: [{ role: "tool", toolCallId: "ghost", content: [{ type: "text", text: "1" }] }] };
    expect(() => geminiRequestBody(bad)).toThrow(expect.objectContaining({ code: "invalid_request", field: "messages[0].tool_call_id" }));
  });
});

describe("OpenAI request", () => {
  it("always streams with usage, keeps tool calls and results in OpenAI's shape", () => {
    const body = openAiRequestBody(conversation, "gpt-x");
    expect(body).toMatchObject({
      model: "gpt-x",
      stream: true,
      stream_options: { include_usage: true },
      tool_choice: { type: "function", function: { name: "lookup" } },
      user: "u-1",
      seed: 3,
    });
    expect(body.messages).toEqual([
      { role: "system", content: "Be brief." },
      {
        role: "user",
        content: [
          { type: "text", text: "What is here?" },
          { type: "image_url", image_url: { url: "data:image/png;base64,iVBORw0K" } },
        ],
      },
      { role: "assistant", content: null, tool_calls: [{ id: "call_1", type: "function", function: { name: "lookup", arguments: '{"q":"x"}' } }] },
      { role: "tool", tool_call_id: "call_1", content: '{"found":true}' },
    ]);
  });
});
