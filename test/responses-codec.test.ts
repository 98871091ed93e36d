import type { ResponseCreateParamsBase, ResponseInputItem } from "openai/resources/responses/responses";
import { describe, expect, it } from "vitest";
import { GatewayError } from "../src/core/errors.js";
import { responsesRequestFrom, responsesRequestFromBody } from "../src/edges/responses/from-responses.js";
import { DEFAULT_ECHO } from "../src/edges/responses/response-object.js";
import { toResponsesError } from "../src/edges/responses/responses-errors.js";

const LIMITS = { maxJsonDepth: 32, maxRequestElements: 20_000 };

function decode(body: Record<string, unknown>) {
  return responsesRequestFrom({ model: "sim", input: "hi", ...body }, LIMITS);
}

function refusal(body: Record<string, unknown>): GatewayError {
  try {
    decode(body);
  } catch (error) {
    if (error instanceof GatewayError) return error;
    throw error;
  }
  throw new Error("expected a refusal");
}

describe("decoding /v1/responses bodies", () => {
  it("a string input with instructions becomes a system and a user message; the defaults are echoed", () => {
    const decoded = decode({ instructions: "Be brief.", input: "Hello", stream: true });
    expect(decoded.stream).toBe(true);
    expect(decoded.request.messages).toEqual([
      { role: "system", content: [{ type: "text", text: "Be brief." }] },
      { role: "user", content: [{ type: "text", text: "Hello" }] },
    ]);
    expect(decoded.echo).toEqual({ ...DEFAULT_ECHO, instructions: "Be brief." });
    expect(decoded.origins).toEqual([]);
  });

  it("items become messages; an assistant turn's reasoning, text and calls are one message, in order", () => {
    const input: ResponseInputItem[] = [
      { role: "developer", content: "Rules." },
      {
        role: "user",
        content: [
          { type: "input_text", text: "Look:" },
          { type: "input_image", image_url: "https://example.com/a.png", detail: "low" },
          { type: "input_image", image_url: "data:image/png;base64,iVBORw0KGgo=", detail: "auto" },
        ],
      },
      { type: "reasoning", id: "rs_1", summary: [{ type: "summary_text", text: "unsigned thought" }] },
      { type: "message", id: "msg_1", role: "assistant", status: "completed", content: [{ type: "output_text", text: "Checking.", annotations: [] }] },
      { type: "function_call", id: "fc_1", call_id: "call_1", name: "get_weather", arguments: '{"city":"Paris"}', status: "completed" },
      { type: "function_call_output", call_id: "call_1", output: "sunny" },
      { type: "function_call_output", call_id: "call_2", output: [{ type: "input_text", text: "a" }, { type: "input_text", text: "b" }] },
      { role: "assistant", content: "Done." },
      { role: "system", content: [{ type: "input_text", text: "Later rule." }] },
    ];
    const { request } = decode({ input });
    expect(request.messages).toEqual([
      { role: "system", content: [{ type: "text", text: "Rules." }] },
      {
        role: "user",
        content: [
          { type: "text", text: "Look:" },
          { type: "image_url", url: "https://example.com/a.png", detail: "low" },
          { type: "image_url", url: "data:image/png;base64,iVBORw0KGgo=", detail: "auto" },
        ],
      },
      {
        role: "assistant",
        content: [
          { type: "reasoning", text: "unsigned thought" },
          { type: "text", text: "Checking." },
        ],
        toolCalls: [{ id: "call_1", name: "get_weather", arguments: '{"city":"Paris"}' }],
      },
      { role: "tool", toolCallId: "call_1", content: [{ type: "text", text: "sunny" }] },
      { role: "tool", toolCallId: "call_2", content: [{ type: "text", text: "a" }, { type: "text", text: "b" }] },
      { role: "assistant", content: [{ type: "text", text: "Done." }] },
      { role: "system", content: [{ type: "text", text: "Later rule." }] },
    ]);
  });

  it("every served option reaches the canonical request and the echo", () => {
    const body = {
      input: "hi",
      tools: [
        { type: "function", name: "get_weather", description: "Weather", parameters: { type: "object", properties: { city: { type: "string" } } }, strict: true },
        { type: "function", name: "noop", parameters: null, strict: null },
      ],
      tool_choice: { type: "function", name: "get_weather" },
      parallel_tool_calls: false,
      text: { format: { type: "json_schema", name: "answer", schema: { type: "object" }, strict: true } },
      reasoning: { effort: "low", summary: "auto" },
      max_output_tokens: 256,
      temperature: 0.5,
      top_p: 0.9,
      metadata: { team: "a" },
      user: "u-1",
      store: false,
      include: ["reasoning.encrypted_content"],
      service_tier: "flex",
      truncation: "disabled",
      previous_response_id: null,
      background: false,
      conversation: null,
    } satisfies ResponseCreateParamsBase;
    const { request, echo, stream } = decode(body);
    expect(stream).toBe(false);
    expect(request).toMatchObject({
      tools: [
        { name: "get_weather", description: "Weather", parameters: body.tools[0]!.parameters, strict: true },
        { name: "noop", description: "", parameters: { type: "object", properties: {} } },
      ],
      toolChoice: { type: "function", name: "get_weather" },
      parallelToolCalls: false,
      responseFormat: { type: "json_schema", name: "answer", schema: { type: "object" }, strict: true },
      reasoning: { effort: "low" },
      sampling: { maxTokens: 256, temperature: 0.5, topP: 0.9, stop: [] },
      metadata: { userId: "u-1", labels: { team: "a" }, providerMetadata: { team: "a" } },
      serviceTier: "flex",
    });
    expect(request.tools[1]!.strict).toBeUndefined();
    expect(echo).toMatchObject({
      tool_choice: { type: "function", name: "get_weather" },
      tools: [body.tools[0], { type: "function", name: "noop", description: null, parameters: null, strict: null }],
      text: { format: body.text.format },
      reasoning: { effort: "low", summary: "auto" },
      max_output_tokens: 256,
      parallel_tool_calls: false,
      metadata: { team: "a" },
      user: "u-1",
      service_tier: "flex",
    });
    for (const choice of ["auto", "none", "required"] as const) {
      expect(decode({ ...body, tool_choice: choice }).request.toolChoice).toEqual({ type: choice });
    }
    expect(decode({ text: { format: { type: "json_object" } } }).request.responseFormat).toEqual({ type: "json_object" });
    expect(decode({ text: { format: { type: "text" } } }).request.responseFormat).toEqual({ type: "text" });
  });

  const refusals: Array<[string, Record<string, unknown>, string, string]> = [
    ["previous_response_id", { previous_response_id: "resp_1" }, "previous_response_id", "send the whole conversation in input"],
    ["store: true", { store: true }, "store", "omit store or set it to false"],
    ["conversation", { conversation: "conv_1" }, "conversation", "send the whole conversation in input"],
    ["background: true", { background: true }, "background", "stream the response instead"],
    ["a stored prompt", { prompt: { id: "pmpt_1" } }, "prompt", "send instructions and input instead"],
    ["an unknown field", { frobnicate: 1 }, "frobnicate", "not served on /v1/responses"],
    ["a field named like an Object property", { constructor: 1 }, "constructor", "not served on /v1/responses"],
    ["top_logprobs", { top_logprobs: 3 }, "top_logprobs", "remove it"],
    ["include of anything but encrypted reasoning", { include: ["reasoning.encrypted_content", "file_search_call.results"] }, "include[1]", 'only "reasoning.encrypted_content"'],
    ["truncation: auto", { truncation: "auto" }, "truncation", "shorten the conversation yourself"],
    ["text.verbosity", { text: { verbosity: "low" } }, "text.verbosity", "remove it"],
    ["an unknown reasoning setting", { reasoning: { effort: "low", mode: "pro" } }, "reasoning", "Unrecognized key"],
    ["a hosted tool_choice", { tools: [{ type: "function", name: "f" }], tool_choice: { type: "web_search_preview" } }, "tool_choice", "hosted tools"],
    ["a custom tool", { tools: [{ type: "custom", name: "c" }] }, "tools[0].type", "declare function tools"],
    ["an item_reference", { input: [{ type: "item_reference", id: "msg_1" }] }, "input[0]", "send the item itself"],
    ["a hosted tool's output item", { input: [{ type: "web_search_call", id: "ws_1", status: "completed" }] }, "input[0].type", "items are not served"],
    ["an image by file_id", { input: [{ role: "user", content: [{ type: "input_image", file_id: "file_1", detail: "auto" }] }] }, "input[0].content[0].file_id", "send the image as image_url"],
    ["an input_file", { input: [{ role: "user", content: [{ type: "input_file", file_id: "file_1" }] }] }, "input[0].content[0].type", "send the file's text as input_text"],
    ["an image in function output", { input: [{ type: "function_call_output", call_id: "c", output: [{ type: "input_image", image_url: "https://x/y.png" }] }] }, "input[0].output[0].type", "send input_text"],
    ["a missing model", { model: undefined }, "model", "expected string"],
    ["a wrong role", { input: [{ role: "tool", content: "x" }] }, "input[0].role", "Invalid option"],
    // The canonical checks, named the Responses way.
    ["an empty user message", { input: [{ role: "user", content: "" }] }, "input[0].content", "must not be empty"],
    ["an empty string input", { input: "" }, "input", "must not be empty"],
    ["an ftp image", { input: [{ role: "user", content: [{ type: "input_image", image_url: "ftp://x/y.png", detail: "auto" }] }] }, "input[0].content[0].image_url", "http(s) or data: URL"],
    ["a bad call name in history", { input: [{ role: "user", content: "q" }, { type: "function_call", call_id: "c1", name: "no spaces", arguments: "{}" }] }, "input[1].name", "letters, digits"],
    ["an empty function output", { input: [{ role: "user", content: "q" }, { type: "function_call", call_id: "c1", name: "f", arguments: "{}" }, { type: "function_call_output", call_id: "c1", output: "" }] }, "input[2].output", "must not be empty"],
    ["temperature 3", { temperature: 3 }, "temperature", "between 0 and 2"],
    ["top_p 0", { top_p: 0 }, "top_p", "greater than 0"],
    ["max_output_tokens 0", { max_output_tokens: 0 }, "max_output_tokens", "at least 1"],
    ["a bad tool name", { tools: [{ type: "function", name: "has space" }] }, "tools[0].name", "letters, digits"],
    ["tool_choice naming no tool", { tools: [{ type: "function", name: "f" }], tool_choice: { type: "function", name: "g" } }, "tool_choice.name", 'no tool named "g"'],
    ["a bad schema name", { text: { format: { type: "json_schema", name: "a b", schema: {} } } }, "text.format.name", "letters, digits"],
    ["17 metadata keys", { metadata: Object.fromEntries(Array.from({ length: 17 }, (_, i) => [`k${i}`, "v"])) }, "metadata", "at most 16"],
  ];
  for (const [name, body, field, text] of refusals) {
    it(`refuses ${name}, naming ${field}`, () => {
      const error = refusal(body);
      expect(error.code).toBe("invalid_request");
      expect(error.field).toBe(field);
      expect(error.message.startsWith(`${field}: `)).toBe(true);
      expect(error.message).toContain(text);
      const wire = toResponsesError(error);
      expect(wire.status).toBe(400);
      expect(wire.body.error).toMatchObject({ type: "invalid_request_error", param: field, code: "invalid_request", message: error.message });
    });
  }

  for (const tool of ["web_search", "web_search_preview", "file_search", "code_interpreter", "computer_use", "computer_use_preview", "mcp", "image_generation", "local_shell"]) {
    it(`refuses the hosted tool ${tool}, naming tools[1].type`, () => {
      const error = refusal({ tools: [{ type: "function", name: "f" }, { type: tool }] });
      expect(error.field).toBe("tools[1].type");
      expect(error.message).toContain(`"${tool}" is a hosted tool, which this gateway does not run: declare a function tool`);
    });
  }

  it("refuses reasoning it did not issue, and envelopes that were altered", () => {
    const openAiOwn = refusal({ input: [{ role: "user", content: "q" }, { type: "reasoning", id: "rs_1", summary: [], encrypted_content: "gAAAAABoSomethingFernet" }] });
    expect(openAiOwn.field).toBe("input[1].encrypted_content");
    expect(openAiOwn.message).toContain("not issued by this gateway");
    const altered = refusal({ input: [{ role: "user", content: "q" }, { type: "reasoning", id: "rs_1", summary: [], encrypted_content: "sluice.rs1.bm90IGpzb24" }] });
    expect(altered.field).toBe("input[1].encrypted_content");
    expect(altered.message).toContain("send reasoning items back exactly as they were received");
  });

  it("errors raised later in the call (a provider refusing a parameter) name the request's own fields", () => {
    const decoded = decode({ input: [{ role: "user", content: "q" }, { role: "assistant", content: [{ type: "output_text", text: "a" }] }, { type: "function_call", call_id: "c", name: "f", arguments: "{}" }] });
    const later = new GatewayError("invalid_request", "response_format: not supported by provider p (gemini); remove it", { field: "response_format" });
    expect(toResponsesError(later, decoded.param).body.error).toMatchObject({ param: "text.format", message: "text.format: not supported by provider p (gemini); remove it" });
    const call = new GatewayError("invalid_request", "messages[1].tool_call_id: unknown", { field: "messages[1].tool_call_id" });
    expect(toResponsesError(call, decoded.param).body.error.param).toBe("input[1].call_id");
    const tooMany = new GatewayError("budget_exceeded", "key k spent its budget");
    expect(toResponsesError(tooMany)).toMatchObject({ status: 429, body: { error: { type: "insufficient_quota", code: "insufficient_quota", param: null } } });
    const limited = new GatewayError("upstream_rate_limited", "slow down", { retryAfterMs: 1500 });
    expect(toResponsesError(limited).headers).toEqual({ "retry-after": "2", "retry-after-ms": "1500" });
  });

  it("enforces the OpenAI edge's structure limits: element count and nesting on the bytes, schema depth after parsing", () => {
    const body = (value: unknown) => new TextEncoder().encode(JSON.stringify(value));
    const many = { model: "sim", input: [{ role: "user", content: Array.from({ length: 200 }, () => ({ type: "input_text", text: "x" })) }] };
    expect(() => responsesRequestFromBody(body(many), { maxJsonDepth: 32, maxRequestElements: 500 })).toThrow(
      expect.objectContaining({ code: "payload_too_large" }) as Error,
    );
    expect(responsesRequestFromBody(body(many), LIMITS).request.messages[0]!.content).toHaveLength(200);

    let deep: Record<string, unknown> = { type: "string" };
    for (let i = 0; i < 40; i++) deep = { type: "object", properties: { a: deep } };
    const tools = [{ type: "function", name: "f", parameters: deep }];
    expect(() => responsesRequestFromBody(body({ model: "sim", input: "hi", tools }), LIMITS)).toThrow(
      expect.objectContaining({ code: "invalid_request", field: expect.stringMatching(/^tools\[0\]\.parameters/) as string }) as Error,
    );
    expect(() => responsesRequestFrom({ model: "sim", input: "hi", tools }, LIMITS)).toThrow(
      expect.objectContaining({ code: "invalid_request", field: "tools[0].parameters" }) as Error,
    );
    expect(() => responsesRequestFromBody(new TextEncoder().encode("{nope"), LIMITS)).toThrow("request body is not valid JSON");
    expect(() => responsesRequestFrom([1], LIMITS)).toThrow("request body: must be a JSON object");
  });
});
