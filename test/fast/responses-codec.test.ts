import OpenAI, { APIError, BadRequestError } from "openai";
import { zodResponsesFunction, zodTextFormat } from "openai/helpers/zod";
import { accumulateResponse } from "openai/lib/responses/ResponseAccumulator";
import type { ResponseCreateParamsBase, ResponseInputItem, ResponseStreamEvent, Response as SdkResponse, ResponseUsage as SdkUsage } from "openai/resources/responses/responses";
import { describe, expect, it } from "vitest";
import { z } from "zod";
import { aggregateDeltas, type ChatResult } from "../../src/core/aggregate.js";
import type { Delta } from "../../src/core/delta.js";
import { GatewayError } from "../../src/core/errors.js";
import { replayForTarget } from "../../src/core/replay-origins.js";
import { responsesRequestFrom, responsesRequestFromBody } from "../../src/edges/responses/from-responses.js";
import { DEFAULT_ECHO, type ResponseObject } from "../../src/edges/responses/response-object.js";
import { toResponsesError } from "../../src/edges/responses/responses-errors.js";
import { createResponseEncoder, responseFromResult } from "../../src/edges/responses/to-responses.js";

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

async function* from(deltas: readonly Delta[]): AsyncGenerator<Delta> {
  yield* deltas;
}

/** The frames the encoder writes for these deltas, one string per frame. */
function framesOf(deltas: readonly Delta[], failure?: unknown): string[] {
  const encoder = createResponseEncoder({ requestModel: "sim", echo: DEFAULT_ECHO });
  const frames: string[] = [];
  for (const delta of deltas) encoder.events(delta, (frame) => frames.push(frame));
  if (failure !== undefined) encoder.failedEvents(failure, (frame) => frames.push(frame));
  return frames;
}

/** A frame's event name and data, checking the frame's own shape on the way. */
function parseFrame(frame: string): { event: string; data: Record<string, unknown> } {
  const match = /^event: ([a-z_.]+)\ndata: (.*)\n\n$/s.exec(frame);
  if (!match) throw new Error(`not an SSE frame: ${JSON.stringify(frame)}`);
  const data = JSON.parse(match[2]!) as Record<string, unknown>;
  expect(data.type).toBe(match[1]);
  return { event: match[1]!, data };
}

/** The frames as one body, cut every 13 bytes: the SDK's SSE decoder must join lines and UTF-8 across reads. */
function sseBody(frames: readonly string[]): ReadableStream<Uint8Array> {
  const bytes = new TextEncoder().encode(frames.join(""));
  return new ReadableStream({
    start(controller) {
      for (let at = 0; at < bytes.length; at += 13) controller.enqueue(bytes.subarray(at, at + 13));
      controller.close();
    },
  });
}

/**
 * What a route would do with this codec, in memory: the SDK's own request
 * body decoded (a refusal answered as the error writer says), then the
 * deltas encoded as SSE or as one response object. The SDK talks to it
 * through its `fetch` option: no socket.
 */
function gateway(deltas: readonly Delta[], options: { failure?: unknown } = {}) {
  const requests: ReturnType<typeof responsesRequestFrom>[] = [];
  const fetch = async (_url: string | URL | Request, init?: RequestInit): Promise<Response> => {
    let parsed: ReturnType<typeof responsesRequestFrom>;
    try {
      parsed = responsesRequestFrom(JSON.parse(String(init?.body)), LIMITS);
    } catch (error) {
      const { status, headers, body } = toResponsesError(error);
      return new Response(JSON.stringify(body), { status, headers: { ...headers, "content-type": "application/json" } });
    }
    requests.push(parsed);
    const options_ = { requestModel: parsed.request.model, echo: parsed.echo, param: parsed.param };
    if (!parsed.stream) {
      const result = await aggregateDeltas(from(deltas));
      return new Response(JSON.stringify(responseFromResult(result, options_)), { headers: { "content-type": "application/json" } });
    }
    const encoder = createResponseEncoder(options_);
    const frames: string[] = [];
    for (const delta of deltas) encoder.events(delta, (frame) => frames.push(frame));
    if (options.failure !== undefined) encoder.failedEvents(options.failure, (frame) => frames.push(frame));
    return new Response(sseBody(frames), { headers: { "content-type": "text/event-stream" } });
  };
  const client = new OpenAI({ apiKey: "sk-test", baseURL: "http://gateway.invalid/v1", maxRetries: 0, fetch });
  return { client, requests };
}

const START: Delta = { type: "start", responseId: "resp_0abc", provider: "sim-provider", model: "sim-1" };
const usage = (extra: Partial<Extract<Delta, { type: "usage" }>> = {}): Delta => ({ type: "usage", inputTokens: 11, outputTokens: 7, cachedInputTokens: 0, reasoningTokens: 0, ...extra });

interface Scenario {
  readonly name: string;
  readonly deltas: readonly Delta[];
  readonly status: "completed" | "incomplete";
  readonly incomplete?: "max_output_tokens" | "content_filter";
  /** Whether a ChatResult keeps the stream's item order (it cannot for text between reasoning signatures). */
  readonly sameOrder: boolean;
}

const SCENARIOS: readonly Scenario[] = [
  {
    name: "text",
    deltas: [START, { type: "text", text: "Hel" }, { type: "text", text: "lo 😀 naïve" }, { type: "text", text: ' "quoted"\n' }, usage(), { type: "finish", reason: "stop" }],
    status: "completed",
    sameOrder: true,
  },
  {
    name: "parallel tool calls",
    deltas: [
      START,
      { type: "text", text: "Let me check." },
      { type: "tool_call", index: 0, id: "call_a", name: "get_weather", arguments: '{"city":' },
      { type: "tool_call", index: 0, arguments: '"Paris"}' },
      { type: "tool_call", index: 1, id: "call_b", name: "get_time", arguments: "{}" },
      usage(),
      { type: "finish", reason: "tool_calls" },
    ],
    status: "completed",
    sameOrder: true,
  },
  {
    name: "signed and redacted reasoning with usage",
    deltas: [
      START,
      { type: "reasoning", text: "Think" },
      { type: "reasoning", text: " hard" },
      { type: "reasoning", text: "", signature: "sig-anthropic-1" },
      { type: "reasoning", text: "", redactedData: "b3BhcXVl" },
      { type: "text", text: "Answer" },
      usage({ cachedInputTokens: 3, reasoningTokens: 5 }),
      { type: "finish", reason: "stop" },
    ],
    status: "completed",
    sameOrder: true,
  },
  {
    name: "Gemini signatures on thought, text and call",
    deltas: [
      START,
      { type: "reasoning", text: "plan", signature: "g-thought" },
      { type: "text", text: "Calling" },
      { type: "reasoning", text: "", signature: "g-text" },
      { type: "tool_call", index: 0, id: "call_g", name: "lookup", arguments: '{"q":1}', signature: "g-call" },
      usage({ estimated: true }),
      { type: "finish", reason: "tool_calls" },
    ],
    status: "completed",
    sameOrder: false,
  },
  {
    name: "length stop",
    deltas: [START, { type: "text", text: "partial answ" }, usage(), { type: "finish", reason: "length" }],
    status: "incomplete",
    incomplete: "max_output_tokens",
    sameOrder: true,
  },
  {
    name: "content filter stop",
    deltas: [START, { type: "reasoning", text: "hmm" }, { type: "text", text: "I can" }, usage(), { type: "finish", reason: "content_filter" }],
    status: "incomplete",
    incomplete: "content_filter",
    sameOrder: true,
  },
];

function usageOf(result: ChatResult) {
  const u = result.usage!;
  return {
    input_tokens: u.inputTokens,
    input_tokens_details: { cached_tokens: u.cachedInputTokens },
    output_tokens: u.outputTokens,
    output_tokens_details: { reasoning_tokens: u.reasoningTokens },
    total_tokens: u.inputTokens + u.outputTokens,
  };
}

function withoutTimes(response: object): object {
  const { created_at: _c, completed_at: _d, ...rest } = response as Record<string, unknown>;
  return rest;
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
      {
        type: "function_call_output",
        call_id: "call_2",
        output: [
          { type: "input_text", text: "a" },
          { type: "input_text", text: "b" },
        ],
      },
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
      {
        role: "tool",
        toolCallId: "call_2",
        content: [
          { type: "text", text: "a" },
          { type: "text", text: "b" },
        ],
      },
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
    ["conversation with previous_response_id", { conversation: "conv_1", previous_response_id: "resp_1" }, "conversation", "mutually exclusive with previous_response_id"],
    ["a conversation that names none", { conversation: { name: "c" } }, "conversation", "must be a conversation id"],
    ["background: true with store: false", { background: true, store: false }, "background", "needs store: true"],
    ["a stored prompt", { prompt: { id: "pmpt_1" } }, "prompt", "send instructions and input instead"],
    ["an unknown field", { frobnicate: 1 }, "frobnicate", "not served on /v1/responses"],
    ["a field named like an Object property", { constructor: 1 }, "constructor", "not served on /v1/responses"],
    ["top_logprobs", { top_logprobs: 3 }, "top_logprobs", "remove it"],
    ["include of anything but encrypted reasoning", { include: ["reasoning.encrypted_content", "file_search_call.results"] }, "include[1]", 'only "reasoning.encrypted_content"'],
    ["text.verbosity", { text: { verbosity: "low" } }, "text.verbosity", "remove it"],
    ["an unknown reasoning setting", { reasoning: { effort: "low", mode: "pro" } }, "reasoning", "Unrecognized key"],
    ["a hosted tool_choice it does not declare", { tools: [{ type: "function", name: "f" }], tool_choice: { type: "web_search_preview" } }, "tool_choice", "which tools does not declare"],
    ["an allowed_tools tool_choice", { tools: [{ type: "function", name: "f" }], tool_choice: { type: "allowed_tools", mode: "auto", tools: [] } }, "tool_choice", "allowed_tools is not served"],
    ["an unknown tool type", { tools: [{ type: "frobnicator", name: "c" }] }, "tools[0].type", "declare function, custom, namespace or hosted tools"],
    ["a hosted tool inside a namespace", { tools: [{ type: "namespace", name: "ns", description: "", tools: [{ type: "web_search" }] }] }, "tools[0].tools[0].type", "inside a namespace"],
    ["a bad member name in a namespace", { tools: [{ type: "namespace", name: "ns", description: "", tools: [{ type: "function", name: "has space" }] }] }, "tools[0].tools[0].name", "letters, digits"],
    ["an item_reference", { input: [{ type: "item_reference", id: "msg_1" }] }, "input[0]", "send the item itself"],
    ["an item of an unknown type", { input: [{ type: "frobnicate_call", id: "x_1" }] }, "input[0].type", "items are not served"],
    ["an image by file_id", { input: [{ role: "user", content: [{ type: "input_image", file_id: "file_1", detail: "auto" }] }] }, "input[0].content[0].file_id", "send the image as image_url"],
    ["an input_file", { input: [{ role: "user", content: [{ type: "input_file", file_id: "file_1" }] }] }, "input[0].content[0].type", "send the file's text as input_text"],
    ["an image in function output", { input: [{ type: "function_call_output", call_id: "c", output: [{ type: "input_image", image_url: "https://x/y.png" }] }] }, "input[0].output[0].type", "send input_text"],
    ["a missing model", { model: undefined }, "model", "expected string"],
    ["a wrong role", { input: [{ role: "tool", content: "x" }] }, "input[0].role", "Invalid option"],
    // The canonical checks, named the Responses way.
    ["an empty user message", { input: [{ role: "user", content: "" }] }, "input[0].content", "must not be empty"],
    ["an empty string input", { input: "" }, "input", "must not be empty"],
    ["an ftp image", { input: [{ role: "user", content: [{ type: "input_image", image_url: "ftp://x/y.png", detail: "auto" }] }] }, "input[0].content[0].image_url", "http(s) or data: URL"],
    [
      "a bad call name in history",
      {
        input: [
          { role: "user", content: "q" },
          { type: "function_call", call_id: "c1", name: "no spaces", arguments: "{}" },
        ],
      },
      "input[1].name",
      "letters, digits",
    ],
    [
      "an empty function output",
      {
        input: [
          { role: "user", content: "q" },
          { type: "function_call", call_id: "c1", name: "f", arguments: "{}" },
          { type: "function_call_output", call_id: "c1", output: "" },
        ],
      },
      "input[2].output",
      "must not be empty",
    ],
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

  for (const tool of ["web_search", "web_search_preview", "file_search", "code_interpreter", "computer_use", "computer_use_preview", "image_generation", "local_shell"]) {
    it(`carries the hosted tool ${tool} as an offer, beside the function tools`, () => {
      const { request, echo } = responsesRequestFrom({ model: "m", input: "q", tools: [{ type: "function", name: "f" }, { type: tool }] }, { maxJsonDepth: 64 });
      expect(request.tools.map((t) => t.name)).toEqual(["f"]);
      expect(request.hostedTools).toEqual([expect.objectContaining({ type: tool, origin: "openai", declaration: { type: tool } })]);
      expect(echo.tools).toEqual([expect.objectContaining({ type: "function", name: "f" }), { type: tool }]);
    });
  }

  it("takes an mcp tool as a server for the gateway to run tools of, not as an offer to the provider", () => {
    const mcp = { type: "mcp", server_label: "github", server_url: "https://example.com/mcp", allowed_tools: { tool_names: ["search"] }, require_approval: "never" };
    const { request, echo, gatewayTools } = responsesRequestFrom({ model: "m", input: "q", tools: [{ type: "function", name: "f" }, mcp] }, { maxJsonDepth: 64 });
    expect(request.hostedTools).toBeUndefined();
    expect(gatewayTools).toEqual({ via: "responses", servers: [{ server: "github", allowedTools: ["search"], field: "tools[1].server_label" }] });
    expect(echo.tools).toEqual([expect.objectContaining({ type: "function", name: "f" }), mcp]);
  });

  it("refuses by name what the gateway's mcp tools do not do: approvals, connectors, caller credentials", () => {
    const base = { type: "mcp", server_label: "github", require_approval: "never" };
    for (const [fields, field] of [
      [{ require_approval: undefined }, "tools[0].require_approval"],
      [{ require_approval: { never: { tool_names: ["a"] } } }, "tools[0].require_approval"],
      [{ connector_id: "connector_gmail" }, "tools[0].connector_id"],
      [{ authorization: "token" }, "tools[0].authorization"],
      [{ headers: { "x-api-key": "k" } }, "tools[0].headers"],
    ] as const) {
      const error = (() => {
        try {
          responsesRequestFrom({ model: "m", input: "q", tools: [{ ...base, ...fields }] }, { maxJsonDepth: 64 });
        } catch (e) {
          return e;
        }
      })();
      expect(error).toBeInstanceOf(GatewayError);
      expect((error as GatewayError).field).toBe(field);
    }
  });

  it("takes custom tools as functions of one string and namespace members by their flat names", () => {
    const { request, calls, param } = responsesRequestFrom(
      {
        model: "m",
        input: [
          { role: "user", content: "q" },
          { type: "custom_tool_call", call_id: "c1", name: "apply_patch", input: "*** Begin Patch\n*** End Patch" },
          { type: "custom_tool_call_output", call_id: "c1", output: "Done" },
          { type: "function_call", call_id: "c2", name: "spawn", namespace: "multi_agent_v1", arguments: "{}" },
          { type: "function_call_output", call_id: "c2", output: "ok" },
        ],
        tools: [
          { type: "custom", name: "apply_patch", description: "Patch files", format: { type: "grammar", syntax: "lark", definition: "start: /.+/" } },
          { type: "namespace", name: "multi_agent_v1", description: "Agents", tools: [{ type: "function", name: "spawn", parameters: { type: "object", properties: {} } }] },
        ],
        tool_choice: { type: "custom", name: "apply_patch" },
      },
      { maxJsonDepth: 64 },
    );
    expect(request.tools.map((t) => t.name)).toEqual(["apply_patch", "multi_agent_v1__spawn"]);
    expect(request.tools[0]).toMatchObject({ freeform: { format: { type: "grammar" } }, parameters: { required: ["input"] } });
    expect(request.tools[1]).toMatchObject({ namespace: { name: "multi_agent_v1", member: "spawn" } });
    expect(request.toolChoice).toEqual({ type: "function", name: "apply_patch" });
    expect(request.messages[1]!.toolCalls).toEqual([{ id: "c1", name: "apply_patch", arguments: JSON.stringify({ input: "*** Begin Patch\n*** End Patch" }) }]);
    expect(request.messages[2]).toMatchObject({ role: "tool", toolCallId: "c1" });
    expect(request.messages[3]!.toolCalls![0]!.name).toBe("multi_agent_v1__spawn");
    expect(calls.get("apply_patch")).toEqual({ freeform: true });
    expect(calls.get("multi_agent_v1__spawn")).toEqual({ freeform: false, namespace: { name: "multi_agent_v1", member: "spawn" } });
    expect(param("tools[1].parameters")).toBe("tools[1].tools[0].parameters");
  });

  it("relays a hosted web search as a web_search_call item: OpenAI's as it came, Anthropic's server_tool_use in those words", () => {
    const encoder = createResponseEncoder({ requestModel: "m", echo: DEFAULT_ECHO });
    const frames: string[] = [];
    const push = (f: string) => frames.push(f);
    encoder.events({ type: "start", responseId: "resp_1", provider: "p", model: "m" }, push);
    encoder.events({ type: "hosted_item", origin: "openai", item: { type: "web_search_call", id: "ws_1", status: "completed", action: { type: "search", query: "a" } } }, push);
    encoder.events({ type: "hosted_item", origin: "anthropic", item: { type: "server_tool_use", id: "srvtoolu_1", name: "web_search", input: { query: "b" } } }, push);
    // A result block has no Responses item: its pages reach the caller as the answer's text.
    encoder.events({ type: "hosted_item", origin: "anthropic", item: { type: "web_search_tool_result", tool_use_id: "srvtoolu_1", content: [] } }, push);
    encoder.events({ type: "text", text: "found" }, push);
    encoder.events({ type: "finish", reason: "stop" }, push);
    expect(encoder.response().output).toEqual([
      { type: "web_search_call", id: "ws_1", status: "completed", action: { type: "search", query: "a" } },
      { type: "web_search_call", id: "srvtoolu_1", status: "completed", action: { type: "search", query: "b" } },
      expect.objectContaining({ type: "message" }),
    ]);
    const types = frames.map((f) => f.slice(7, f.indexOf("\n")));
    expect(types.filter((t) => t === "response.output_item.added")).toHaveLength(3);
  });

  it("streams a freeform call back as a custom_tool_call, its input decoded as the arguments arrive", () => {
    const encoder = createResponseEncoder({
      requestModel: "m",
      echo: DEFAULT_ECHO,
      calls: new Map([
        ["apply_patch", { freeform: true }],
        ["ns__f", { freeform: false, namespace: { name: "ns", member: "f" } }],
      ]),
    });
    const frames: string[] = [];
    const push = (f: string) => frames.push(f);
    const args = JSON.stringify({ input: 'line "one"\nline two \u00e9' });
    encoder.events({ type: "start", responseId: "resp_1", provider: "p", model: "m" }, push);
    encoder.events({ type: "tool_call", index: 0, id: "call_1", name: "apply_patch", arguments: "" }, push);
    for (let i = 0; i < args.length; i += 3) encoder.events({ type: "tool_call", index: 0, arguments: args.slice(i, i + 3) }, push);
    encoder.events({ type: "tool_call", index: 1, id: "call_2", name: "ns__f", arguments: "{}" }, push);
    encoder.events({ type: "finish", reason: "tool_calls" }, push);
    const events = frames.map((f) => JSON.parse(f.slice(f.indexOf("data: ") + 6)) as { type: string; delta?: string; input?: string });
    const deltas = events.filter((e) => e.type === "response.custom_tool_call_input.delta");
    expect(deltas.length).toBeGreaterThan(3);
    expect(deltas.map((e) => e.delta).join("")).toBe('line "one"\nline two \u00e9');
    expect(events.find((e) => e.type === "response.custom_tool_call_input.done")?.input).toBe('line "one"\nline two \u00e9');
    expect(encoder.response().output).toEqual([
      { type: "custom_tool_call", id: expect.any(String), call_id: "call_1", name: "apply_patch", input: 'line "one"\nline two \u00e9' },
      expect.objectContaining({ type: "function_call", call_id: "call_2", name: "f", namespace: "ns", arguments: "{}" }),
    ]);
  });

  it("refuses reasoning it did not issue, and envelopes that were altered", () => {
    const openAiOwn = refusal({
      input: [
        { role: "user", content: "q" },
        { type: "reasoning", id: "rs_1", summary: [], encrypted_content: "gAAAAABoSomethingFernet" },
      ],
    });
    expect(openAiOwn.field).toBe("input[1].encrypted_content");
    expect(openAiOwn.message).toContain("not issued by this gateway");
    const altered = refusal({
      input: [
        { role: "user", content: "q" },
        { type: "reasoning", id: "rs_1", summary: [], encrypted_content: "sluice.rs1.bm90IGpzb24" },
      ],
    });
    expect(altered.field).toBe("input[1].encrypted_content");
    expect(altered.message).toContain("send reasoning items back exactly as they were received");
  });

  it("errors raised later in the call (a provider refusing a parameter) name the request's own fields", () => {
    const decoded = decode({
      input: [
        { role: "user", content: "q" },
        { role: "assistant", content: [{ type: "output_text", text: "a" }] },
        { type: "function_call", call_id: "c", name: "f", arguments: "{}" },
      ],
    });
    const later = new GatewayError("invalid_request", "response_format: not supported by provider p (gemini); remove it", { field: "response_format" });
    expect(toResponsesError(later, decoded.param).body.error).toMatchObject({ param: "text.format", message: "text.format: not supported by provider p (gemini); remove it" });
    const call = new GatewayError("invalid_request", "messages[1].tool_call_id: unknown", { field: "messages[1].tool_call_id" });
    expect(toResponsesError(call, decoded.param).body.error.param).toBe("input[1].call_id");
    const spent = new GatewayError("budget_exceeded", "key k spent its budget", { budget: { level: "key", httpStatus: 402 } });
    expect(toResponsesError(spent)).toMatchObject({ status: 402, headers: { "sluice-budget-level": "key" }, body: { error: { type: "insufficient_quota", code: "budget_exceeded", param: null } } });
    const compat = new GatewayError("budget_exceeded", "key k spent its budget", { budget: { level: "key", httpStatus: 429 } });
    expect(toResponsesError(compat)).toMatchObject({ status: 429, body: { error: { type: "insufficient_quota", code: "budget_exceeded" } } });
    const limited = new GatewayError("upstream_rate_limited", "slow down", { retryAfterMs: 1500 });
    expect(toResponsesError(limited).headers).toEqual({ "retry-after": "2", "retry-after-ms": "1500" });
  });

  it("enforces the OpenAI edge's structure limits: element count and nesting on the bytes, schema depth after parsing", () => {
    const body = (value: unknown) => new TextEncoder().encode(JSON.stringify(value));
    const many = { model: "sim", input: [{ role: "user", content: Array.from({ length: 200 }, () => ({ type: "input_text", text: "x" })) }] };
    expect(() => responsesRequestFromBody(body(many), { maxJsonDepth: 32, maxRequestElements: 500 })).toThrow(expect.objectContaining({ code: "payload_too_large" }) as Error);
    expect(responsesRequestFromBody(body(many), LIMITS).request.messages[0]!.content).toHaveLength(200);

    let deep: Record<string, unknown> = { type: "string" };
    for (let i = 0; i < 40; i++) deep = { type: "object", properties: { a: deep } };
    const tools = [{ type: "function", name: "f", parameters: deep }];
    expect(() => responsesRequestFromBody(body({ model: "sim", input: "hi", tools }), LIMITS)).toThrow(expect.objectContaining({ code: "invalid_request", field: expect.stringMatching(/^tools\[0\]\.parameters/) as string }) as Error);
    expect(() => responsesRequestFrom({ model: "sim", input: "hi", tools }, LIMITS)).toThrow(expect.objectContaining({ code: "invalid_request", field: "tools[0].parameters" }) as Error);
    expect(() => responsesRequestFromBody(new TextEncoder().encode("{nope"), LIMITS)).toThrow("request body is not valid JSON");
    expect(() => responsesRequestFrom([1], LIMITS)).toThrow("request body: must be a JSON object");
  });
});

describe("encoding deltas as Responses events", () => {
  it("a text answer: lifecycle, item and part events in order, sequence numbers 0, 1, 2, …", () => {
    const events = framesOf(SCENARIOS[0]!.deltas).map(parseFrame);
    expect(events.map((e) => e.event)).toEqual([
      "response.created",
      "response.in_progress",
      "response.output_item.added",
      "response.content_part.added",
      "response.output_text.delta",
      "response.output_text.delta",
      "response.output_text.delta",
      "response.output_text.done",
      "response.content_part.done",
      "response.output_item.done",
      "response.completed",
    ]);
    expect(events.map((e) => e.data.sequence_number)).toEqual(events.map((_, i) => i));
    expect(events[4]!.data).toEqual({ type: "response.output_text.delta", sequence_number: 4, item_id: "msg_0abc_0", output_index: 0, content_index: 0, delta: "Hel", logprobs: [] });
    expect(events[0]!.data.response).toMatchObject({ id: "resp_0abc", object: "response", status: "in_progress", model: "sim", output: [], store: false });
    expect(events.at(-1)!.data.response).toMatchObject({ status: "completed", store: false, usage: { input_tokens: 11, output_tokens: 7, total_tokens: 18 } });
  });

  it("parallel tool calls: one output item at a time, each call's arguments under its own index, closed before the next opens", () => {
    const events = framesOf(SCENARIOS[1]!.deltas).map(parseFrame);
    const names = events.map((e) => `${e.event}${"output_index" in e.data ? `@${String(e.data.output_index)}` : ""}`);
    expect(names).toEqual([
      "response.created",
      "response.in_progress",
      "response.output_item.added@0",
      "response.content_part.added@0",
      "response.output_text.delta@0",
      "response.output_text.done@0",
      "response.content_part.done@0",
      "response.output_item.done@0",
      "response.output_item.added@1",
      "response.function_call_arguments.delta@1",
      "response.function_call_arguments.delta@1",
      "response.function_call_arguments.done@1",
      "response.output_item.done@1",
      "response.output_item.added@2",
      "response.function_call_arguments.delta@2",
      "response.function_call_arguments.done@2",
      "response.output_item.done@2",
      "response.completed",
    ]);
    expect(events.map((e) => e.data.sequence_number)).toEqual(events.map((_, i) => i));
    expect(events[12]!.data.item).toEqual({ type: "function_call", id: "fc_0abc_1", call_id: "call_a", name: "get_weather", arguments: '{"city":"Paris"}', status: "completed" });
  });

  it("a fragment for a call already closed (no provider sends one) still reaches its item: a late delta, and the terminal event carries the whole call", () => {
    const events = framesOf([
      START,
      { type: "tool_call", index: 0, id: "call_a", name: "get_weather", arguments: '{"city":' },
      { type: "tool_call", index: 1, id: "call_b", name: "get_time", arguments: "{}" },
      { type: "tool_call", index: 0, arguments: '"Paris"}' },
      { type: "finish", reason: "tool_calls" },
    ]).map(parseFrame);
    const names = events.map((e) => `${e.event}${"output_index" in e.data ? `@${String(e.data.output_index)}` : ""}`);
    expect(names.indexOf("response.output_item.done@0")).toBeLessThan(names.indexOf("response.output_item.added@1"));
    const output = (events.at(-1)!.data.response as { output: Array<{ arguments: string }> }).output;
    expect(output.map((item) => item.arguments)).toEqual(['{"city":"Paris"}', "{}"]);
  });

  it("reasoning: summary part and text events; a signature or a withheld block rides in encrypted_content", () => {
    const events = framesOf(SCENARIOS[2]!.deltas).map(parseFrame);
    expect(events.map((e) => e.event).slice(2, 11)).toEqual([
      "response.output_item.added",
      "response.reasoning_summary_part.added",
      "response.reasoning_summary_text.delta",
      "response.reasoning_summary_text.delta",
      "response.reasoning_summary_text.done",
      "response.reasoning_summary_part.done",
      "response.output_item.done",
      "response.output_item.added",
      "response.output_item.done",
    ]);
    const done = events.filter((e) => e.event === "response.output_item.done").map((e) => e.data.item as Record<string, unknown>);
    expect(done[0]).toMatchObject({ type: "reasoning", summary: [{ type: "summary_text", text: "Think hard" }], status: "completed" });
    expect(done[0]!.encrypted_content).toMatch(/^sluice\.rs1\./);
    expect(done[1]).toMatchObject({ type: "reasoning", summary: [] });
    expect(done[1]!.encrypted_content).toMatch(/^sluice\.rs1\./);
    expect(events.at(-1)!.data.response).toMatchObject({
      usage: { input_tokens_details: { cached_tokens: 3 }, output_tokens_details: { reasoning_tokens: 5 } },
    });
  });

  it("a length stop ends with response.incomplete, its open item incomplete", () => {
    const events = framesOf(SCENARIOS[4]!.deltas).map(parseFrame);
    const last = events.at(-1)!;
    expect(last.event).toBe("response.incomplete");
    expect(last.data.response).toMatchObject({ status: "incomplete", incomplete_details: { reason: "max_output_tokens" }, output: [{ status: "incomplete" }] });
  });

  it("a failure mid-stream: response.failed with the partial output, then an error event; before start only the error", () => {
    const failure = new GatewayError("upstream_unavailable", "provider p failed mid-stream");
    const events = framesOf([START, { type: "text", text: "par" }], failure).map(parseFrame);
    expect(events.slice(-2).map((e) => e.event)).toEqual(["response.failed", "error"]);
    expect(events.at(-2)!.data.response).toMatchObject({ status: "failed", error: { code: "server_error", message: "provider p failed mid-stream" }, output: [{ type: "message", status: "incomplete" }] });
    expect(events.at(-1)!.data).toMatchObject({ code: "upstream_unavailable", message: "provider p failed mid-stream", error: { type: "api_error", code: "upstream_unavailable" } });
    expect(events.map((e) => e.data.sequence_number)).toEqual(events.map((_, i) => i));
    expect(
      framesOf([], failure)
        .map(parseFrame)
        .map((e) => e.event),
    ).toEqual(["error"]);
    const finished = framesOf(SCENARIOS[0]!.deltas, failure).map(parseFrame);
    expect(finished.at(-1)!.event).toBe("response.completed");
  });
});

describe("the openai SDK reading the encoder's events (in memory, through its fetch option)", () => {
  for (const scenario of SCENARIOS) {
    it(`${scenario.name}: the SDK's final response is what aggregateDeltas gives, and replays`, async () => {
      const result = await aggregateDeltas(from(scenario.deltas));
      const { client, requests } = gateway(scenario.deltas);
      const stream = client.responses.stream({ model: "sim", input: "q", include: ["reasoning.encrypted_content"], store: false });
      const events: ResponseStreamEvent[] = [];
      stream.on("event", (event) => events.push(event));
      const final = await stream.finalResponse();
      expect(requests[0]!.request.messages).toEqual([{ role: "user", content: [{ type: "text", text: "q" }] }]);

      expect(events.map((e) => e.sequence_number)).toEqual(events.map((_, i) => i));
      expect(final.status).toBe(scenario.status);
      expect(final.incomplete_details).toEqual(scenario.incomplete ? { reason: scenario.incomplete } : null);
      expect(final.output_text).toBe(result.text);
      expect(final.usage).toMatchObject(usageOf(result));
      const calls = final.output.flatMap((item) => (item.type === "function_call" ? [{ id: item.call_id, name: item.name, arguments: item.arguments }] : []));
      expect(calls).toEqual(result.toolCalls.map(({ id, name, arguments: args }) => ({ id, name, arguments: args })));
      const summaries = final.output.flatMap((item) => (item.type === "reasoning" ? item.summary.map((s) => s.text) : []));
      expect(summaries.join("")).toBe(result.reasoning);

      // The incremental events alone build the same output the terminal event carries.
      const terminal = events.at(-1)! as Extract<ResponseStreamEvent, { type: "response.completed" | "response.incomplete" }>;
      let snapshot: SdkResponse | undefined;
      for (const event of events.slice(0, -1)) snapshot = accumulateResponse(event, snapshot);
      expect(snapshot!.output).toEqual(terminal.response.output);
      expect(snapshot!.output_text).toBe(result.text);

      // stream: false gives the same answer.
      const whole = responseFromResult(result, { requestModel: "sim", echo: requests[0]!.echo });
      if (scenario.sameOrder) expect(withoutTimes(whole)).toEqual(withoutTimes(terminal.response));
      const plain = await gateway(scenario.deltas).client.responses.create({ model: "sim", input: "q" });
      expect(plain.output_text).toBe(result.text);
      expect(plain.status).toBe(scenario.status);

      // The next turn: the output sent back as input carries every signature to the same target.
      const next = responsesRequestFrom(
        {
          model: "sim",
          input: [{ role: "user", content: "q" }, ...final.output, ...calls.map((c) => ({ type: "function_call_output", call_id: c.id, output: "ok" }))],
        },
        LIMITS,
      );
      const assistant = next.request.messages.filter((m) => m.role === "assistant");
      expect(assistant).toHaveLength(1);
      const turn = assistant[0]!;
      expect(turn.content.filter((p) => p.type === "reasoning")).toEqual(result.reasoningParts);
      expect(turn.content.flatMap((p) => (p.type === "text" ? [p.text] : [])).join("")).toBe(result.text);
      expect(turn.toolCalls ?? []).toEqual(result.toolCalls);
      const same = replayForTarget(next.request, next.origins, { provider: "sim-provider", model: "sim-1" });
      expect(same).toBe(next.request);
      const other = replayForTarget(next.request, next.origins, { provider: "other", model: "sim-1" });
      const otherTurn = other.messages.find((m) => m.role === "assistant");
      const signed = (otherTurn?.content ?? []).filter((p) => p.type === "reasoning" && (p.signature !== undefined || p.redactedData !== undefined));
      expect(signed).toEqual([]);
      expect((otherTurn?.toolCalls ?? []).every((c) => c.signature === undefined)).toBe(true);
    });
  }

  it("a failure mid-stream makes the SDK raise (not return a truncated answer), after it saw response.failed", async () => {
    const failure = new GatewayError("upstream_unavailable", "provider p failed mid-stream");
    const { client } = gateway([START, { type: "text", text: "par" }], { failure });
    const stream = client.responses.stream({ model: "sim", input: "q" });
    const seen: string[] = [];
    stream.on("event", (event) => seen.push(event.type));
    const error: unknown = await stream.finalResponse().catch((e: unknown) => e);
    expect(error).toBeInstanceOf(APIError);
    expect((error as APIError).message).toContain("provider p failed mid-stream");
    expect((error as APIError).code).toBe("upstream_unavailable");
    expect(seen.at(-1)).toBe("response.failed");
  });

  it("a failure before start makes the SDK raise on the first frame", async () => {
    const { client } = gateway([], { failure: new GatewayError("upstream_timeout", "no first token in time") });
    const error: unknown = await client.responses
      .stream({ model: "sim", input: "q" })
      .finalResponse()
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(APIError);
    expect((error as APIError).message).toContain("no first token in time");
  });

  it("a refused request reaches the SDK as a BadRequestError naming the parameter", async () => {
    const { client } = gateway(SCENARIOS[0]!.deltas);
    const error: unknown = await client.responses.create({ model: "sim", input: "q", previous_response_id: "resp_1" }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(BadRequestError);
    expect((error as BadRequestError).param).toBe("previous_response_id");
    expect((error as BadRequestError).message).toContain("send the whole conversation in input");
    const hosted: unknown = await client.responses.create({ model: "sim", input: "q", tools: [{ type: "frobnicator" } as never] }).catch((e: unknown) => e);
    expect((hosted as BadRequestError).param).toBe("tools[0].type");
  });

  const Weather = z.object({ city: z.string(), celsius: z.number(), tags: z.array(z.string()) });
  const answer = { city: "Paris", celsius: 21.5, tags: ["sunny", "warm"] };
  const json = JSON.stringify(answer);
  const jsonDeltas: Delta[] = [START, { type: "text", text: json.slice(0, 9) }, { type: "text", text: json.slice(9) }, usage(), { type: "finish", reason: "stop" }];

  it("responses.parse with a zod text.format: the schema reaches the request, the output parses", async () => {
    const { client, requests } = gateway(jsonDeltas);
    const parsed = await client.responses.parse({ model: "sim", input: "weather?", text: { format: zodTextFormat(Weather, "weather") } });
    expect(parsed.output_parsed).toEqual(answer);
    expect(requests[0]!.request.responseFormat).toMatchObject({ type: "json_schema", name: "weather", strict: true, schema: { type: "object", required: ["city", "celsius", "tags"] } });
    const streamed = await client.responses.stream({ model: "sim", input: "weather?", text: { format: zodTextFormat(Weather, "weather") } }).finalResponse();
    expect(streamed.output_parsed).toEqual(answer);
  });

  it("a zod function tool: its schema reaches the request, the call's arguments parse", async () => {
    const tool = zodResponsesFunction({ name: "get_weather", parameters: z.object({ city: z.string() }) });
    const deltas: Delta[] = [START, { type: "tool_call", index: 0, id: "call_1", name: "get_weather", arguments: '{"ci' }, { type: "tool_call", index: 0, arguments: 'ty":"Oslo"}' }, usage(), { type: "finish", reason: "tool_calls" }];
    const { client, requests } = gateway(deltas);
    const parsed = await client.responses.stream({ model: "sim", input: "weather?", tools: [tool] }).finalResponse();
    const call = parsed.output.find((item) => item.type === "function_call");
    expect(call).toMatchObject({ call_id: "call_1", name: "get_weather", parsed_arguments: { city: "Oslo" } });
    expect(requests[0]!.request.tools[0]).toMatchObject({ name: "get_weather", strict: true, parameters: { type: "object", required: ["city"] } });
  });
});

/** The wire types as the SDK's: readonly removed, since the SDK's arrays are mutable. */
type Writable<T> = T extends readonly (infer U)[] ? Writable<U>[] : T extends object ? { -readonly [K in keyof T]: Writable<T[K]> } : T;

/**
 * The SDK's response without `output_text` (the SDK computes it) and
 * without `cache_write_tokens`: the canonical usage has no such count
 * (Anthropic's cache writes are inside the input tokens), and a 0 would say
 * something untrue.
 */
type SdkWireResponse = Omit<SdkResponse, "output_text" | "usage" | "tools" | "tool_choice"> & {
  usage?: Omit<SdkUsage, "input_tokens_details"> & { input_tokens_details: Omit<SdkUsage["input_tokens_details"], "cache_write_tokens"> };
};

// Compile-time only: the response object is one the SDK's own type describes (`tools` and `tool_choice` repeat the caller's own declarations).
type ResponseObjectIsSdkResponse = Writable<ResponseObject> extends SdkWireResponse ? true : never;
const _responseObjectFits: ResponseObjectIsSdkResponse = true;
void _responseObjectFits;
