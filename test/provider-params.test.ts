import { describe, expect, it } from "vitest";
import type { ChatRequest } from "../src/core/chat-request.js";
import type { OptionalParam } from "../src/core/request-params.js";
import { anthropicRequestBody, anthropicUnsupportedParams } from "../src/providers/anthropic/anthropic-request.js";
import { geminiRequestBody, geminiUnsupportedParams } from "../src/providers/gemini/gemini-request.js";
import { openAiRequestBody, openAiUnsupportedParams } from "../src/providers/openai/openai-request.js";
import { prepareRequest } from "../src/providers/param-policy.js";
import { adapterFor } from "../src/providers/registry.js";
import { testTarget } from "./helpers/translate.js";

const base: ChatRequest = {
  model: "alias",
  messages: [{ role: "user", content: [{ type: "text", text: "hi" }] }],
  tools: [],
  sampling: { stop: [] },
  metadata: { labels: {} },
};
const SCHEMA = { type: "object", properties: { city: { type: "string" } }, required: ["city"], additionalProperties: false };
const TOOL = { name: "lookup", description: "", parameters: { type: "object" } };
const FAILED_TOOL_TURN: ChatRequest["messages"] = [
  { role: "user", content: [{ type: "text", text: "hi" }] },
  { role: "assistant", content: [], toolCalls: [{ id: "call_1", name: "lookup", arguments: "{}" }] },
  { role: "tool", toolCallId: "call_1", isError: true, content: [{ type: "text", text: "no such city" }] },
];

const body = {
  openai: (r: ChatRequest) => openAiRequestBody(r, "m"),
  anthropic: (r: ChatRequest) => anthropicRequestBody(r, "claude-sonnet-4-6"),
  gemini: (r: ChatRequest) => geminiRequestBody(r),
};
const unsupported = { openai: openAiUnsupportedParams, anthropic: anthropicUnsupportedParams, gemini: geminiUnsupportedParams };

/**
 * One row per new field: the canonical request change, and for each
 * provider either the fields it adds to the body (matched as a subset) or
 * the parameter it reports as unsupported.
 */
interface Row {
  readonly name: string;
  readonly request: Partial<ChatRequest>;
  readonly openai: Record<string, unknown> | OptionalParam;
  readonly anthropic: Record<string, unknown> | OptionalParam;
  readonly gemini: Record<string, unknown> | OptionalParam;
}

const ROWS: Row[] = [
  {
    name: "max tokens",
    request: { sampling: { stop: [], maxTokens: 50 } },
    openai: { max_completion_tokens: 50 },
    anthropic: { max_tokens: 50 },
    gemini: { generationConfig: { maxOutputTokens: 50 } },
  },
  {
    name: "response format: text",
    request: { responseFormat: { type: "text" } },
    openai: { response_format: { type: "text" } },
    anthropic: {},
    gemini: { generationConfig: { responseMimeType: "text/plain" } },
  },
  {
    name: "response format: JSON mode",
    request: { responseFormat: { type: "json_object" } },
    openai: { response_format: { type: "json_object" } },
    anthropic: "response_format",
    gemini: { generationConfig: { responseMimeType: "application/json" } },
  },
  {
    name: "response format: JSON schema",
    request: { responseFormat: { type: "json_schema", name: "city", description: "a city", schema: SCHEMA, strict: true } },
    openai: { response_format: { type: "json_schema", json_schema: { name: "city", description: "a city", schema: SCHEMA, strict: true } } },
    anthropic: { output_config: { format: { type: "json_schema", schema: SCHEMA } } },
    gemini: { generationConfig: { responseMimeType: "application/json", responseJsonSchema: SCHEMA } },
  },
  {
    name: "reasoning effort",
    request: { reasoning: { effort: "high" } },
    openai: { reasoning_effort: "high" },
    anthropic: { thinking: { type: "adaptive" }, output_config: { effort: "high" } },
    gemini: { generationConfig: { thinkingConfig: { thinkingLevel: "high" } } },
  },
  {
    name: "reasoning effort none",
    request: { reasoning: { effort: "none" } },
    openai: { reasoning_effort: "none" },
    anthropic: { thinking: { type: "disabled" } },
    gemini: { generationConfig: { thinkingConfig: { thinkingBudget: 0 } } },
  },
  {
    name: "reasoning budget, returned",
    request: { reasoning: { budgetTokens: 2048, includeReasoning: true } },
    openai: "reasoning.budget_tokens",
    anthropic: { thinking: { type: "enabled", budget_tokens: 2048 }, max_tokens: 2048 + 4096 },
    gemini: { generationConfig: { thinkingConfig: { thinkingBudget: 2048, includeThoughts: true } } },
  },
  {
    name: "reasoning effort and budget together",
    request: { reasoning: { effort: "low", budgetTokens: 1024 } },
    openai: "reasoning.budget_tokens",
    anthropic: { thinking: { type: "enabled", budget_tokens: 1024 }, output_config: { effort: "low" } },
    gemini: "reasoning.effort",
  },
  {
    name: "presence penalty",
    request: { sampling: { stop: [], presencePenalty: 0.5 } },
    openai: { presence_penalty: 0.5 },
    anthropic: "sampling.presence_penalty",
    gemini: { generationConfig: { presencePenalty: 0.5 } },
  },
  {
    name: "frequency penalty",
    request: { sampling: { stop: [], frequencyPenalty: -0.5 } },
    openai: { frequency_penalty: -0.5 },
    anthropic: "sampling.frequency_penalty",
    gemini: { generationConfig: { frequencyPenalty: -0.5 } },
  },
  {
    name: "logit bias",
    request: { sampling: { stop: [], logitBias: { "50256": -100 } } },
    openai: { logit_bias: { "50256": -100 } },
    anthropic: "sampling.logit_bias",
    gemini: "sampling.logit_bias",
  },
  {
    name: "seed",
    request: { sampling: { stop: [], seed: 7 } },
    openai: { seed: 7 },
    anthropic: "sampling.seed",
    gemini: { generationConfig: { seed: 7 } },
  },
  {
    name: "stop sequences",
    request: { sampling: { stop: ["END"] } },
    openai: { stop: ["END"] },
    anthropic: { stop_sequences: ["END"] },
    gemini: { generationConfig: { stopSequences: ["END"] } },
  },
  {
    name: "top-k sampling",
    request: { sampling: { stop: [], topK: 40 } },
    openai: "sampling.top_k",
    anthropic: { top_k: 40 },
    gemini: { generationConfig: { topK: 40 } },
  },
  {
    name: "failed tool result",
    request: { tools: [TOOL], messages: FAILED_TOOL_TURN },
    openai: "messages.is_error",
    anthropic: {
      messages: [
        { role: "user", content: [{ type: "text", text: "hi" }] },
        { role: "assistant", content: [{ type: "tool_use", id: "call_1", name: "lookup", input: {} }] },
        { role: "user", content: [{ type: "tool_result", tool_use_id: "call_1", content: "no such city", is_error: true }] },
      ],
    },
    gemini: {
      contents: [
        { role: "user", parts: [{ text: "hi" }] },
        { role: "model", parts: [{ functionCall: { name: "lookup", args: {} } }] },
        { role: "user", parts: [{ functionResponse: { name: "lookup", response: { error: "no such city" } } }] },
      ],
    },
  },
  {
    name: "logprobs with alternatives",
    request: { logprobs: { topLogprobs: 3 } },
    openai: { logprobs: true, top_logprobs: 3 },
    anthropic: "logprobs",
    gemini: { generationConfig: { responseLogprobs: true, logprobs: 3 } },
  },
  {
    name: "no parallel tool calls",
    request: { tools: [TOOL], parallelToolCalls: false },
    openai: { parallel_tool_calls: false },
    anthropic: { tool_choice: { type: "auto", disable_parallel_tool_use: true } },
    gemini: "parallel_tool_calls",
  },
  {
    name: "strict tool",
    request: { tools: [{ ...TOOL, strict: true }] },
    openai: { tools: [{ type: "function", function: { name: "lookup", parameters: { type: "object" }, strict: true } }] },
    anthropic: { tools: [{ name: "lookup", input_schema: { type: "object" }, strict: true }] },
    gemini: "tools.strict",
  },
  {
    name: "service tier default",
    request: { serviceTier: "default" },
    openai: { service_tier: "default" },
    anthropic: { service_tier: "standard_only" },
    gemini: "service_tier",
  },
  {
    name: "service tier flex",
    request: { serviceTier: "flex" },
    openai: { service_tier: "flex" },
    anthropic: "service_tier",
    gemini: "service_tier",
  },
  {
    name: "user",
    request: { metadata: { labels: {}, userId: "u-1" } },
    openai: { user: "u-1" },
    anthropic: { metadata: { user_id: "u-1" } },
    gemini: {},
  },
  {
    name: "provider metadata",
    request: { metadata: { labels: {}, providerMetadata: { team: "search" } } },
    openai: { metadata: { team: "search" } },
    anthropic: "metadata.provider_metadata",
    gemini: "metadata.provider_metadata",
  },
];

describe.each(["openai", "anthropic", "gemini"] as const)("%s request body for each new parameter", (kind) => {
  for (const row of ROWS) {
    const expected = row[kind];
    const request = { ...base, ...row.request };
    if (typeof expected === "string") {
      it(`${row.name}: reported as unsupported (${expected})`, () => {
        expect(unsupported[kind](request)).toContain(expected);
      });
    } else {
      it(`${row.name}: sent as the provider names it`, () => {
        expect(unsupported[kind](request)).toEqual([]);
        expect(body[kind](request)).toMatchObject(expected);
      });
    }
  }

  it("nothing optional is sent when nothing optional was asked for", () => {
    const sent = JSON.stringify(body[kind](base));
    for (const field of ["reasoning_effort", "thinking", "output_config", "thinkingConfig", "response_format", "responseMimeType", "logprobs", "penalty", "parallel", "service_tier", "metadata", 'max_tokens":', "max_completion_tokens"]) {
      if (kind === "anthropic" && field === 'max_tokens":') continue; // Anthropic requires max_tokens.
      expect(sent, field).not.toContain(field);
    }
  });

  it("provider options are merged into this kind's body only, objects key by key", () => {
    const request: ChatRequest = {
      ...base,
      sampling: { stop: [], temperature: 0.3 },
      providerOptions: {
        openai: { prediction: { type: "content", content: "x" } },
        anthropic: { top_k: 5, metadata: { user_id: "from-options" } },
        gemini: { generationConfig: { topK: 5 }, safetySettings: [{ category: "HARM_CATEGORY_HATE_SPEECH", threshold: "BLOCK_NONE" }] },
      },
    };
    const sent = body[kind](request);
    if (kind === "openai") expect(sent).toMatchObject({ prediction: { type: "content", content: "x" }, temperature: 0.3 });
    if (kind === "anthropic") expect(sent).toMatchObject({ top_k: 5, temperature: 0.3, metadata: { user_id: "from-options" } });
    if (kind === "gemini") expect(sent).toMatchObject({ generationConfig: { topK: 5, temperature: 0.3 }, safetySettings: [{ threshold: "BLOCK_NONE" }] });
    expect(JSON.stringify(sent)).not.toContain(kind === "openai" ? "top_k" : "prediction");
  });

  it("provider options cannot pick the model or turn streaming off, and a __proto__ key stays data", () => {
    for (const key of ["model", "stream"]) {
      const request: ChatRequest = { ...base, providerOptions: { [kind]: { [key]: "x" } } };
      expect(() => body[kind](request)).toThrow(expect.objectContaining({ code: "invalid_request", field: `provider_options.${kind}.${key}` }));
    }
    const hostile = JSON.parse(`{"__proto__": {"polluted": true}}`) as Record<string, unknown>;
    const sent = body[kind]({ ...base, providerOptions: { [kind]: hostile } });
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
    // biome-ignore lint/suspicious/noProto: the test is about a `__proto__` key surviving as data
    expect(JSON.parse(JSON.stringify(sent)).__proto__).toEqual({ polluted: true });
  });
});

describe("the unsupported-parameter rule", () => {
  const request: ChatRequest = { ...base, logprobs: {}, sampling: { stop: [], seed: 3, temperature: 0.2 } };
  const target = testTarget("anthropic");

  it("rejects by default, naming every parameter and the provider", () => {
    expect(() => prepareRequest(adapterFor("anthropic"), request, target, false)).toThrow(
      expect.objectContaining({
        code: "invalid_request",
        field: "sampling.seed",
        message: "sampling.seed, logprobs: not supported by provider up (anthropic); remove them, or set dropUnsupportedParams on the model alias",
      }),
    );
  });

  it("drops and reports them when the alias allows it, leaving the rest alone", () => {
    const prepared = prepareRequest(adapterFor("anthropic"), request, target, true);
    expect(prepared.droppedParams).toEqual(["sampling.seed", "logprobs"]);
    expect(prepared.request.logprobs).toBeUndefined();
    expect(prepared.request.sampling).toEqual({ stop: [], temperature: 0.2 });
  });

  it("top_k and a failed tool result, which OpenAI has no field for, are dropped whole when the alias allows it", () => {
    const asked: ChatRequest = { ...base, messages: FAILED_TOOL_TURN, sampling: { stop: [], topK: 5, temperature: 0.2 } };
    const prepared = prepareRequest(adapterFor("openai"), asked, testTarget("openai"), true);
    expect(prepared.droppedParams).toEqual(["sampling.top_k", "messages.is_error"]);
    expect(prepared.request.sampling).toEqual({ stop: [], temperature: 0.2 });
    expect(prepared.request.messages.some((m) => "isError" in m)).toBe(false);
    expect(prepared.request.messages.map((m) => m.content)).toEqual(FAILED_TOOL_TURN.map((m) => m.content));
  });

  it("passes a request the provider can honour unchanged", () => {
    const prepared = prepareRequest(adapterFor("openai"), request, testTarget("openai"), false);
    expect(prepared).toEqual({ request, droppedParams: [] });
  });
});

describe("replayed reasoning and signatures in request bodies", () => {
  const replay: ChatRequest = {
    ...base,
    tools: [TOOL],
    messages: [
      { role: "user", content: [{ type: "text", text: "weather?" }] },
      {
        role: "assistant",
        content: [
          { type: "reasoning", text: "Let me look.", signature: "sig-1" },
          { type: "reasoning", text: "", redactedData: "opaque" },
          { type: "reasoning", text: "unsigned, from another provider" },
          { type: "text", text: "Checking." },
          { type: "reasoning", text: "", signature: "text-sig" },
        ],
        toolCalls: [
          { id: "c1", name: "lookup", arguments: '{"q":"x"}', signature: "fc-sig" },
          { id: "c2", name: "lookup", arguments: "{}" },
        ],
      },
      { role: "tool", toolCallId: "c1", content: [{ type: "text", text: "1" }] },
      { role: "tool", toolCallId: "c2", content: [{ type: "text", text: "2" }] },
    ],
  };

  it("Anthropic: signed thinking and redacted blocks first, unsigned reasoning left out", () => {
    const messages = anthropicRequestBody(replay, "m").messages as Array<{ content: unknown[] }>;
    expect(messages[1]!.content).toEqual([
      { type: "thinking", thinking: "Let me look.", signature: "sig-1" },
      { type: "redacted_thinking", data: "opaque" },
      { type: "text", text: "Checking." },
      { type: "tool_use", id: "c1", name: "lookup", input: { q: "x" } },
      { type: "tool_use", id: "c2", name: "lookup", input: {} },
    ]);
  });

  it("Gemini: thought parts, a bare signature back on its text part, thoughtSignature on the signed call", () => {
    const contents = geminiRequestBody(replay).contents as Array<{ parts: unknown[] }>;
    expect(contents[1]!.parts).toEqual([
      { text: "Let me look.", thought: true, thoughtSignature: "sig-1" },
      { text: "unsigned, from another provider", thought: true },
      { text: "Checking.", thoughtSignature: "text-sig" },
      { functionCall: { name: "lookup", args: { q: "x" } }, thoughtSignature: "fc-sig" },
      { functionCall: { name: "lookup", args: {} } },
    ]);
  });

  it("OpenAI: no field for earlier reasoning, so only the visible turn is sent", () => {
    const messages = openAiRequestBody(replay, "m").messages as unknown[];
    expect(messages[1]).toEqual({
      role: "assistant",
      content: "Checking.",
      tool_calls: [
        { id: "c1", type: "function", function: { name: "lookup", arguments: '{"q":"x"}' } },
        { id: "c2", type: "function", function: { name: "lookup", arguments: "{}" } },
      ],
    });
  });
});
