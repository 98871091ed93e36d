import { describe, expect, it } from "vitest";
import type { ChatRequest } from "../../src/core/chat-request.js";
import type { GatewayError } from "../../src/core/errors.js";
import { anthropicRequestFrom, countTokensRequestFrom } from "../../src/edges/anthropic/from-anthropic.js";
import { parseJsonBody as requestJson } from "../../src/http/read-json.js";
import { anthropicRequestBody } from "../../src/providers/anthropic/anthropic-request.js";

const LIMITS = { maxRequestElements: 10_000, maxJsonDepth: 32 };
const decode = (body: unknown) => anthropicRequestFrom(body, LIMITS);

/** A body with one user message; `extra` adds or replaces top-level fields. */
const body = (extra: Record<string, unknown> = {}) => ({ model: "claude", max_tokens: 100, messages: [{ role: "user", content: "hi" }], ...extra });
const user = (content: unknown) => ({ role: "user", content });
const assistant = (content: unknown) => ({ role: "assistant", content });
const WEATHER = { name: "weather", description: "Weather by city", input_schema: { type: "object", properties: { city: { type: "string" } } } };
const CALL = { type: "tool_use", id: "toolu_1", name: "weather", input: { city: "Paris" } };

/** The canonical request for `body()` with `extra` merged in. */
const canonical = (extra: Partial<ChatRequest> = {}): ChatRequest => ({
  model: "claude",
  messages: [{ role: "user", content: [{ type: "text", text: "hi" }] }],
  tools: [],
  sampling: { maxTokens: 100, stop: [] },
  metadata: { labels: {} },
  ...extra,
});

interface Accepted {
  readonly name: string;
  readonly body: unknown;
  readonly request: ChatRequest;
  readonly stream?: boolean;
}

const ACCEPTED: Accepted[] = [
  { name: "the smallest request", body: body(), request: canonical() },
  {
    name: "system as a string and as text blocks (one system message per block), stream",
    body: body({
      system: [
        { type: "text", text: "Be brief." },
        { type: "text", text: "Be kind.", cache_control: null },
      ],
      stream: true,
    }),
    request: canonical({
      messages: [
        { role: "system", content: [{ type: "text", text: "Be brief." }] },
        { role: "system", content: [{ type: "text", text: "Be kind." }] },
        { role: "user", content: [{ type: "text", text: "hi" }] },
      ],
    }),
    stream: true,
  },
  {
    name: "images from base64 (as a data: URL) and from a URL",
    body: body({
      messages: [
        user([
          { type: "text", text: "Compare" },
          { type: "image", source: { type: "base64", media_type: "image/png", data: "iVBORw0K" } },
          { type: "image", source: { type: "url", url: "https://example.test/cat.jpg" } },
        ]),
      ],
    }),
    request: canonical({
      messages: [
        {
          role: "user",
          content: [
            { type: "text", text: "Compare" },
            { type: "image_url", url: "data:image/png;base64,iVBORw0K" },
            { type: "image_url", url: "https://example.test/cat.jpg" },
          ],
        },
      ],
    }),
  },
  {
    name: "a tool loop: signed thinking, text and tool_use; results as string and blocks, one failed, then text",
    body: body({
      tools: [WEATHER],
      messages: [
        user("Weather in Paris and Rome?"),
        assistant([
          { type: "thinking", thinking: "Two cities.", signature: "sig-1" },
          { type: "redacted_thinking", data: "opaque" },
          { type: "text", text: "Checking." },
          CALL,
          { type: "tool_use", id: "toolu_2", name: "weather", input: { city: "Rome" } },
        ]),
        user([
          { type: "tool_result", tool_use_id: "toolu_1", content: "18°C" },
          { type: "tool_result", tool_use_id: "toolu_2", content: [{ type: "text", text: "no such city" }], is_error: true },
          { type: "text", text: "And tomorrow?" },
        ]),
      ],
    }),
    request: canonical({
      tools: [{ name: "weather", description: "Weather by city", parameters: WEATHER.input_schema }],
      messages: [
        { role: "user", content: [{ type: "text", text: "Weather in Paris and Rome?" }] },
        {
          role: "assistant",
          content: [
            { type: "reasoning", text: "Two cities.", signature: "sig-1" },
            { type: "reasoning", text: "", redactedData: "opaque" },
            { type: "text", text: "Checking." },
          ],
          toolCalls: [
            { id: "toolu_1", name: "weather", arguments: '{"city":"Paris"}' },
            { id: "toolu_2", name: "weather", arguments: '{"city":"Rome"}' },
          ],
        },
        { role: "tool", toolCallId: "toolu_1", content: [{ type: "text", text: "18°C" }] },
        { role: "tool", toolCallId: "toolu_2", content: [{ type: "text", text: "no such city" }], isError: true },
        { role: "user", content: [{ type: "text", text: "And tomorrow?" }] },
      ],
    }),
  },
  {
    name: "a response's content replayed as the SDK returns it (citations: null, caller direct), an empty tool result",
    body: body({
      tools: [WEATHER],
      messages: [
        user("Paris?"),
        assistant([
          { type: "text", text: "Checking.", citations: null },
          { ...CALL, caller: { type: "direct" } },
        ]),
        user([{ type: "tool_result", tool_use_id: "toolu_1" }]),
      ],
    }),
    request: canonical({
      tools: [{ name: "weather", description: "Weather by city", parameters: WEATHER.input_schema }],
      messages: [
        { role: "user", content: [{ type: "text", text: "Paris?" }] },
        { role: "assistant", content: [{ type: "text", text: "Checking." }], toolCalls: [{ id: "toolu_1", name: "weather", arguments: '{"city":"Paris"}' }] },
        { role: "tool", toolCallId: "toolu_1", content: [{ type: "text", text: "" }] },
      ],
    }),
  },
  {
    name: "a system message inside messages keeps its place",
    body: body({ messages: [user("a"), { role: "system", content: "Now in French." }, user("b")] }),
    request: canonical({
      messages: [
        { role: "user", content: [{ type: "text", text: "a" }] },
        { role: "system", content: [{ type: "text", text: "Now in French." }] },
        { role: "user", content: [{ type: "text", text: "b" }] },
      ],
    }),
  },
  {
    name: "sampling, stop sequences, metadata.user_id",
    body: body({ temperature: 0.3, top_p: 0.9, top_k: 40, stop_sequences: ["END"], metadata: { user_id: "u-1" } }),
    request: canonical({ sampling: { maxTokens: 100, stop: ["END"], temperature: 0.3, topP: 0.9, topK: 40 }, metadata: { labels: {}, userId: "u-1" } }),
  },
  {
    name: "null optional fields are absent",
    body: body({ temperature: null, top_k: null, stop_sequences: null, metadata: { user_id: null }, stream: null, tools: null }),
    request: canonical(),
  },
  ...(
    [
      ["auto", { type: "auto" }, undefined],
      ["any without parallel calls", { type: "any", disable_parallel_tool_use: true }, false],
      ["tool", { type: "tool", name: "weather", disable_parallel_tool_use: false }, undefined],
      ["none", { type: "none" }, undefined],
    ] as const
  ).map(
    ([name, choice, parallel]): Accepted => ({
      name: `tool_choice ${name}`,
      body: body({ tools: [{ ...WEATHER, strict: true }], tool_choice: choice }),
      request: canonical({
        tools: [{ name: "weather", description: "Weather by city", parameters: WEATHER.input_schema, strict: true }],
        toolChoice: choice.type === "any" ? { type: "required" } : choice.type === "tool" ? { type: "function", name: "weather" } : { type: choice.type },
        ...(parallel === undefined ? {} : { parallelToolCalls: parallel }),
      }),
    }),
  ),
  {
    name: "thinking enabled with a budget",
    body: body({ max_tokens: 4000, thinking: { type: "enabled", budget_tokens: 2048 } }),
    request: canonical({ sampling: { maxTokens: 4000, stop: [] }, reasoning: { budgetTokens: 2048 } }),
  },
  {
    name: "adaptive thinking is Anthropic's default effort, high; display omitted keeps the text in the gateway",
    body: body({ thinking: { type: "adaptive", display: "omitted" } }),
    request: canonical({ reasoning: { effort: "high", includeReasoning: false, display: "omitted" } }),
  },
  {
    name: "output_config.effort is the canonical effort (max is xhigh), beside adaptive thinking",
    body: body({ thinking: { type: "adaptive", display: "updates" }, output_config: { effort: "max" } }),
    request: canonical({ reasoning: { effort: "xhigh", includeReasoning: true, display: "updates" } }),
  },
  {
    name: "prompt caching on blocks, tools and tool results is carried as breakpoints",
    body: body({
      system: [{ type: "text", text: "S", cache_control: { type: "ephemeral", ttl: "1h" } }],
      tools: [{ ...WEATHER, cache_control: { type: "ephemeral" }, defer_loading: true, eager_input_streaming: true }],
      messages: [
        user([{ type: "text", text: "x", cache_control: { type: "ephemeral" } }]),
        assistant([{ ...CALL, cache_control: { type: "ephemeral" } }]),
        user([{ type: "tool_result", tool_use_id: "toolu_1", content: "r", cache_control: { type: "ephemeral" } }]),
      ],
      context_management: { edits: [{ type: "clear_thinking_20251015", keep: "all" }] },
    }),
    request: canonical({
      messages: [
        { role: "system", content: [{ type: "text", text: "S", cache: { ttl: "1h" } }] },
        { role: "user", content: [{ type: "text", text: "x", cache: {} }] },
        { role: "assistant", content: [], toolCalls: [{ id: "toolu_1", name: CALL.name, arguments: JSON.stringify(CALL.input), cache: {} }] },
        { role: "tool", toolCallId: "toolu_1", content: [{ type: "text", text: "r" }], cache: {} },
      ],
      tools: [{ name: WEATHER.name, description: WEATHER.description, parameters: WEATHER.input_schema, cache: {}, deferLoading: true, eagerInputStreaming: true }],
      carried: { contextManagement: { edits: [{ type: "clear_thinking_20251015", keep: "all" }] } },
    }),
  },
  {
    name: "a thinking block without a signature is dropped, and a turn of nothing else with it",
    body: body({
      messages: [
        user("q"),
        assistant([{ type: "thinking", thinking: "t", signature: "" }]),
        assistant([
          { type: "thinking", thinking: "u" },
          { type: "text", text: "a" },
        ]),
        user("q2"),
      ],
    }),
    request: canonical({
      messages: [
        { role: "user", content: [{ type: "text", text: "q" }] },
        { role: "assistant", content: [{ type: "text", text: "a" }] },
        { role: "user", content: [{ type: "text", text: "q2" }] },
      ],
    }),
  },
  { name: "thinking disabled is effort none", body: body({ thinking: { type: "disabled" } }), request: canonical({ reasoning: { effort: "none" } }) },
  {
    name: "display summarized asks for the reasoning text",
    body: body({ max_tokens: 2000, thinking: { type: "enabled", budget_tokens: 1024, display: "summarized" } }),
    request: canonical({ sampling: { maxTokens: 2000, stop: [] }, reasoning: { budgetTokens: 1024, includeReasoning: true, display: "summarized" } }),
  },
];

interface Refused {
  readonly name: string;
  readonly body: unknown;
  readonly field: string;
  readonly message?: string | RegExp;
  readonly code?: GatewayError["code"];
}

const REFUSED: Refused[] = [
  { name: "a field the gateway cannot pass on", body: body({ container: "c-1" }), field: "container", message: "container: not supported by this gateway: it changes the answer, and the gateway has no way to honour it." },
  { name: "an output_config field the gateway has no mapping for", body: body({ output_config: { effort: "low", verbosity: "x" } }), field: "output_config.verbosity" },
  { name: "a misspelt field", body: body({ max_token: 5 }), field: "max_token" },
  { name: "max_tokens is required, as at Anthropic", body: { model: "claude", messages: [user("hi")] }, field: "max_tokens" },
  { name: "a non-object body", body: [1], field: "body", message: /^request body: / },
  { name: "temperature above Anthropic's 1", body: body({ temperature: 1.5 }), field: "temperature" },
  { name: "top_k not a whole number", body: body({ top_k: 2.5 }), field: "top_k" },
  { name: "more stop sequences than the gateway passes on", body: body({ stop_sequences: ["a", "b", "c", "d", "e"] }), field: "stop_sequences", message: "stop_sequences: at most 4 stop sequences" },
  { name: "no messages", body: body({ messages: [] }), field: "messages" },
  { name: "an empty message", body: body({ messages: [user([])] }), field: "messages[0].content", message: "messages[0].content: must not be empty" },
  { name: "a cache_control type Anthropic does not have", body: body({ messages: [user([{ type: "text", text: "x", cache_control: { type: "forever" } }])] }), field: "messages[0].content[0].cache_control.type" },
  { name: "citations in a replayed block", body: body({ messages: [user("q"), assistant([{ type: "text", text: "x", citations: [{ type: "char_location" }] }])] }), field: "messages[1].content[0].citations[0]" },
  {
    name: "a document block",
    body: body({ messages: [user([{ type: "document", source: {} }])] }),
    field: "messages[0].content[0].type",
    message: 'messages[0].content[0].type: "document" is not supported here (expected "text", "image", "tool_result")',
  },
  { name: "a tool_use block from the user", body: body({ messages: [user([CALL])] }), field: "messages[0].content[0].type" },
  { name: "an image from the Files API", body: body({ messages: [user([{ type: "image", source: { type: "file", file_id: "f" } }])] }), field: "messages[0].content[0].source.type" },
  { name: "an image media type Anthropic does not take", body: body({ messages: [user([{ type: "image", source: { type: "base64", media_type: "image/tiff", data: "x" } }])] }), field: "messages[0].content[0].source.media_type" },
  { name: "an image URL that is not http(s)", body: body({ messages: [user([{ type: "image", source: { type: "url", url: "file:///etc/passwd" } }])] }), field: "messages[0].content[0].source.url" },
  {
    name: "an image inside a tool result (every provider takes results as text)",
    body: body({ messages: [user("q"), assistant([CALL]), user([{ type: "tool_result", tool_use_id: "toolu_1", content: [{ type: "image", source: { type: "url", url: "https://x.test/a.png" } }] }])] }),
    field: "messages[2].content[0].content[0].type",
  },
  { name: "a tool result for no earlier call", body: body({ messages: [user([{ type: "tool_result", tool_use_id: "toolu_9", content: "x" }])] }), field: "messages[0].content[0].tool_use_id" },
  { name: "a tool call name no provider takes", body: body({ messages: [user("q"), assistant([{ ...CALL, name: "a b" }])] }), field: "messages[1].content[0].name" },
  { name: "a tool_use id used twice", body: body({ messages: [user("q"), assistant([CALL, CALL])] }), field: "messages[1].content[1].id" },
  { name: "tool input that is not an object", body: body({ messages: [user("q"), assistant([{ ...CALL, input: [1] }])] }), field: "messages[1].content[0].input" },
  { name: "an Anthropic-defined client tool", body: body({ tools: [{ type: "bash_20250124", name: "bash" }] }), field: "tools[0].type", message: /other Anthropic-defined tools are not supported/ },
  { name: "a custom tool without input_schema", body: body({ tools: [{ name: "weather" }] }), field: "tools[0].input_schema", message: /must be a JSON Schema object/ },
  { name: "a tool field the gateway cannot pass on", body: body({ tools: [{ ...WEATHER, cache: true }] }), field: "tools[0].cache" },
  { name: "tool_choice naming no tool", body: body({ tools: [WEATHER], tool_choice: { type: "tool", name: "clock" } }), field: "tool_choice.name", message: 'tool_choice.name: no tool named "clock" in tools' },
  { name: "tool_choice any without tools", body: body({ tool_choice: { type: "any" } }), field: "tool_choice" },
  { name: "a thinking budget below Anthropic's 1024", body: body({ thinking: { type: "enabled", budget_tokens: 500 } }), field: "thinking.budget_tokens" },
  { name: "a thinking budget not below max_tokens", body: body({ thinking: { type: "enabled", budget_tokens: 2000 } }), field: "thinking.budget_tokens", message: "thinking.budget_tokens: must be less than max_tokens" },
  {
    name: "a thinking type the gateway has no mapping for",
    body: body({ thinking: { type: "between_tools" } }),
    field: "thinking.type",
    message: 'thinking.type: "between_tools" is not supported here (expected "enabled", "adaptive", "disabled")',
  },
  { name: "a block type that is not a string", body: body({ messages: [user([{ type: 7 }])] }), field: "messages[0].content[0].type", message: /^messages\[0\]\.content\[0\]\.type: this value is not supported here/ },
  { name: "metadata beyond user_id", body: body({ metadata: { user_id: "u", session: "s" } }), field: "metadata.session" },
  { name: "a thinking signature longer than any provider issues", body: body({ messages: [user("q"), assistant([{ type: "thinking", thinking: "t", signature: "s".repeat(70_000) }])] }), field: "messages[1].content[0].signature" },
  {
    name: "an unknown key is cut before it is echoed",
    body: body({ ["k".repeat(10_000)]: 1 }),
    field: `${"k".repeat(256)}…`,
  },
];

describe("Anthropic Messages request → canonical request", () => {
  it.each(ACCEPTED)("$name", ({ body: b, request, stream }) => {
    expect(decode(b)).toEqual({ request, stream: stream ?? false, droppedParams: [] });
  });
});

describe("refusals name the field (nothing is dropped silently)", () => {
  it.each(REFUSED)("$name → $field", ({ body: b, field, message, code }) => {
    let error: GatewayError | undefined;
    try {
      decode(b);
    } catch (e) {
      error = e as GatewayError;
    }
    expect(error).toMatchObject({ code: code ?? "invalid_request", field });
    if (typeof message === "string") expect(error?.message).toBe(message);
    else if (message) expect(error?.message).toMatch(message);
    else expect(error?.message.startsWith(`${field}: `)).toBe(true);
  });
});

describe("structure limits, as on the OpenAI facade", () => {
  const bytes = (value: unknown) => new TextEncoder().encode(JSON.stringify(value));

  it("too many elements is payload_too_large before anything is parsed", () => {
    const many = body({ stop_sequences: Array.from({ length: 50 }, () => "x") });
    expect(() => requestJson(bytes(many), { maxRequestElements: 40, maxJsonDepth: 32 })).toThrow(expect.objectContaining({ code: "payload_too_large" }));
  });

  it("nesting past the limit is refused naming the path", () => {
    let deep: unknown = 1;
    for (let i = 0; i < 12; i++) deep = { a: deep };
    const hostile = body({ messages: [user("q"), assistant([{ ...CALL, input: deep }])] });
    expect(() => requestJson(bytes(hostile), { maxRequestElements: 10_000, maxJsonDepth: 4 })).toThrow(expect.objectContaining({ code: "invalid_request", field: "messages[1].content[0].input.a.a.a.a.a.a.a" }));
  });

  it("a tool schema nested deeper than maxJsonDepth is refused as input_schema", () => {
    let schema: Record<string, unknown> = { type: "string" };
    for (let i = 0; i < 6; i++) schema = { type: "object", properties: { x: schema } };
    const json = requestJson(bytes(body({ tools: [{ name: "deep", input_schema: schema }] })), LIMITS);
    expect(() => anthropicRequestFrom(json, { maxJsonDepth: 8 })).toThrow(expect.objectContaining({ field: "tools[0].input_schema", message: "tools[0].input_schema: JSON Schema nested deeper than 8 levels" }));
  });

  it("a body that is not JSON", () => {
    expect(() => requestJson(new TextEncoder().encode("{"), LIMITS)).toThrow(expect.objectContaining({ code: "invalid_request", message: "request body is not valid JSON" }));
  });
});

describe("count_tokens request", () => {
  it("is the prompt without generation settings", () => {
    const { max_tokens: _max, ...prompt } = body({ system: "Be brief.", tools: [WEATHER], tool_choice: { type: "auto" }, thinking: { type: "adaptive" } });
    expect(countTokensRequestFrom(prompt, LIMITS)).toEqual({
      model: "claude",
      messages: [
        { role: "system", content: [{ type: "text", text: "Be brief." }] },
        { role: "user", content: [{ type: "text", text: "hi" }] },
      ],
      tools: [{ name: "weather", description: "Weather by city", parameters: WEATHER.input_schema }],
      toolChoice: { type: "auto" },
      reasoning: { effort: "high" },
      sampling: { stop: [] },
      metadata: { labels: {} },
    });
  });

  it.each(["max_tokens", "stream", "temperature", "stop_sequences", "metadata"])("refuses %s, which count_tokens does not take", (field) => {
    const { max_tokens: _max, ...prompt } = body();
    expect(() => countTokensRequestFrom({ ...prompt, [field]: field === "stream" ? true : 1 }, LIMITS)).toThrow(expect.objectContaining({ field }));
  });
});

describe("Anthropic in, Anthropic out", () => {
  it("a request decoded and built again for an Anthropic target is the request the client sent", () => {
    const sent = {
      model: "claude",
      max_tokens: 4000,
      system: "Be brief.",
      messages: [
        user([
          { type: "text", text: "Weather here?" },
          { type: "image", source: { type: "base64", media_type: "image/jpeg", data: "/9j/4AAQ" } },
          { type: "image", source: { type: "url", url: "https://example.test/map.png" } },
        ]),
        assistant([{ type: "thinking", thinking: "Need the city.", signature: "EqQBCkYIBxgCKkA" }, { type: "redacted_thinking", data: "EmwKAhgBEgy3va3pzix" }, { type: "text", text: "Checking." }, CALL]),
        user([{ type: "tool_result", tool_use_id: "toolu_1", content: "unknown city", is_error: true }]),
      ],
      tools: [{ ...WEATHER, strict: true }],
      tool_choice: { type: "tool", name: "weather", disable_parallel_tool_use: true },
      thinking: { type: "enabled", budget_tokens: 2048 },
      temperature: 1,
      top_k: 20,
      stop_sequences: ["END"],
      metadata: { user_id: "u-1" },
    };
    const { request } = decode(sent);
    expect(anthropicRequestBody(request, "claude-sonnet-5")).toEqual({ ...sent, model: "claude-sonnet-5", stream: true });
  });
});
