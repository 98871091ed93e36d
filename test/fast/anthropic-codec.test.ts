import Anthropic from "@anthropic-ai/sdk";
import { describe, expect, it } from "vitest";
import { aggregateDeltas } from "../../src/core/aggregate.js";
import type { Delta } from "../../src/core/delta.js";
import { GatewayError } from "../../src/core/errors.js";
import { HEARTBEAT, type Heartbeat } from "../../src/core/heartbeats.js";
import { messageFromResult } from "../../src/edges/anthropic/anthropic-message.js";
import { createMessageEncoder, errorEvent, PING_FRAME } from "../../src/edges/anthropic/to-anthropic.js";
import { createAnthropicTranslator } from "../../src/providers/anthropic/anthropic-translator.js";
import { testTarget, translateWire } from "../helpers/translate.js";

const ALIAS = "claude-fast";
const START: Delta = { type: "start", responseId: "resp_0123", provider: "up", model: "claude-sonnet-5" };
const usage = (inputTokens: number, outputTokens: number, cachedInputTokens = 0, reasoningTokens = 0): Delta => ({
  type: "usage",
  inputTokens,
  outputTokens,
  cachedInputTokens,
  reasoningTokens,
});

/** The encoder's frames for `deltas`, each checked to be `event: <type>` with data whose `type` repeats it. */
function encode(deltas: readonly (Delta | Heartbeat)[]): string[] {
  const encoder = createMessageEncoder({ requestModel: ALIAS });
  const frames: string[] = [];
  for (const delta of deltas) encoder.events(delta, (f) => frames.push(f));
  for (const f of frames) {
    const match = /^event: (\w+)\ndata: (.*)\n\n$/s.exec(f);
    expect(match, f).not.toBeNull();
    expect((JSON.parse(match![2]!) as { type: string }).type).toBe(match![1]);
  }
  return frames;
}

/** The events of `frames` as objects: what a reader of the wire sees. */
const events = (frames: readonly string[]) => frames.map((f) => JSON.parse(f.slice(f.indexOf("data: ") + 6)) as Record<string, unknown>);

/**
 * The official SDK reading `frames` as the body of a `messages.stream()`
 * response, in memory: an Anthropic client whose fetch answers with them,
 * `chunkBytes` at a time. Returns what `finalMessage()` gives.
 */
async function sdkFinalMessage(frames: readonly string[], chunkBytes = Number.POSITIVE_INFINITY): Promise<unknown> {
  const bytes = new TextEncoder().encode(frames.join(""));
  const client = new Anthropic({
    apiKey: "k",
    baseURL: "http://sluice.test",
    maxRetries: 0,
    fetch: async () => {
      let at = 0;
      const body = new ReadableStream<Uint8Array>({
        pull(controller) {
          if (at >= bytes.length) return controller.close();
          const end = Math.min(bytes.length, at + chunkBytes);
          controller.enqueue(bytes.slice(at, end));
          at = end;
        },
      });
      return new Response(body, { status: 200, headers: { "content-type": "text/event-stream" } });
    },
  });
  const stream = client.messages.stream({ model: ALIAS, max_tokens: 100, messages: [{ role: "user", content: "hi" }] });
  const { parsed_output: _parsed, ...message } = await stream.finalMessage();
  return message;
}

async function* from(deltas: readonly Delta[]): AsyncGenerator<Delta> {
  yield* deltas;
}

interface Sequence {
  readonly name: string;
  readonly deltas: readonly Delta[];
}

/** Delta sequences as providers produce them, in the orders Claude writes blocks (see messageFromResult). */
const SEQUENCES: Sequence[] = [
  {
    name: "text in pieces, usage with cache reads",
    deltas: [START, { type: "text", text: "Hello" }, { type: "text", text: ', "world"\n' }, usage(120, 7, 100), { type: "finish", reason: "stop" }],
  },
  {
    name: "signed thinking, then text",
    deltas: [START, { type: "reasoning", text: "The user greets. " }, { type: "reasoning", text: "Greet back.", signature: "sig-A" }, { type: "text", text: "Hi!" }, usage(10, 30, 0, 20), { type: "finish", reason: "stop" }],
  },
  {
    name: "two signed thinking blocks, a redacted one, text, two tool calls in pieces",
    deltas: [
      START,
      { type: "reasoning", text: "First, weather." },
      { type: "reasoning", text: "", signature: "sig-1" },
      { type: "reasoning", text: "Then time.", signature: "sig-2" },
      { type: "reasoning", text: "", redactedData: "opaque==" },
      { type: "text", text: "Checking both." },
      { type: "tool_call", index: 0, id: "toolu_a", name: "weather", arguments: "" },
      { type: "tool_call", index: 0, arguments: '{"city":' },
      { type: "tool_call", index: 0, arguments: '"Paris"}' },
      { type: "tool_call", index: 1, id: "toolu_b", name: "time", arguments: '{"tz":"CET"}' },
      usage(50, 80),
      { type: "finish", reason: "tool_calls" },
    ],
  },
  {
    name: "a tool call with no arguments, no usage reported",
    deltas: [START, { type: "tool_call", index: 0, id: "toolu_n", name: "now", arguments: "" }, { type: "finish", reason: "tool_calls" }],
  },
  {
    name: "a bare signature (Gemini signs text) and a stop sequence",
    deltas: [START, { type: "reasoning", text: "", signature: "g-sig" }, { type: "text", text: "1, 2" }, usage(3, 4), { type: "finish", reason: "stop", stopSequence: ", 3" }],
  },
  {
    name: "cut by the token limit; heartbeats and logprobs in between",
    deltas: [START, { type: "text", text: "Once upon" }, { type: "logprobs", tokens: [] }, usage(3, 2), { type: "finish", reason: "length" }],
  },
  { name: "refused", deltas: [START, usage(9, 0), { type: "finish", reason: "content_filter" }] },
];

describe("the official SDK assembles from the frames what aggregateDeltas gives for the same deltas", () => {
  it.each(SEQUENCES)("$name", async ({ deltas }) => {
    const expected = messageFromResult(await aggregateDeltas(from(deltas)), ALIAS);
    const withPings = deltas.flatMap((d, i): (Delta | Heartbeat)[] => (i % 2 === 1 ? [HEARTBEAT, d] : [d]));
    const frames = encode(withPings);
    expect(await sdkFinalMessage(frames)).toEqual(expected);
    // The same bytes in 7-byte pieces: frames cut anywhere, even inside a UTF-8 character.
    expect(await sdkFinalMessage(frames, 7)).toEqual(expected);
  });
});

describe("the encoder's event sequence", () => {
  it("message_start, blocks opened and closed as the kind of delta changes, message_delta, message_stop", () => {
    const out = events(encode(SEQUENCES[2]!.deltas));
    expect(out.map((e) => (e.type === "content_block_delta" ? `${e.index}:${(e.delta as { type: string }).type}` : e.type === "content_block_start" || e.type === "content_block_stop" ? `${e.type}:${e.index}` : e.type))).toEqual([
      "message_start",
      "content_block_start:0",
      "0:thinking_delta",
      "0:signature_delta",
      "content_block_stop:0",
      "content_block_start:1",
      "1:thinking_delta",
      "1:signature_delta",
      "content_block_stop:1",
      "content_block_start:2",
      "content_block_stop:2",
      "content_block_start:3",
      "3:text_delta",
      "content_block_stop:3",
      "content_block_start:4",
      "4:input_json_delta",
      "4:input_json_delta",
      "content_block_stop:4",
      "content_block_start:5",
      "5:input_json_delta",
      "content_block_stop:5",
      "message_delta",
      "message_stop",
    ]);
  });

  // Gemini signs its text, the signature arriving after the text: a thinking block there would end the message,
  // which Claude never does (Claude Code took its empty text as the answer). Before more content it is interleaved thinking.
  it("a signature alone after text is not written after the last block; before a tool call it is its own thinking block", async () => {
    const thought: Delta = { type: "reasoning", text: "Quote the result." };
    const signedText: Delta[] = [START, thought, { type: "text", text: "Bash returned: ok" }, { type: "reasoning", text: "", signature: "g-text-sig" }];
    const ended = (await sdkFinalMessage(encode([...signedText, usage(3, 4), { type: "finish", reason: "stop" }]))) as Anthropic.Message;
    expect(ended.content.map((b) => b.type)).toEqual(["thinking", "text"]);
    expect(ended.content.at(-1)).toEqual({ type: "text", text: "Bash returned: ok" });
    const more = [...signedText, { type: "tool_call", index: 0, id: "toolu_x", name: "now", arguments: "{}" } as const, { type: "finish", reason: "tool_calls" } as const];
    const called = (await sdkFinalMessage(encode(more))) as Anthropic.Message;
    expect(called.content.map((b) => b.type)).toEqual(["thinking", "text", "thinking", "tool_use"]);
    expect(called.content[2]).toEqual({ type: "thinking", thinking: "", signature: "g-text-sig" });
  });

  it("message_start names the alias the caller asked for and a msg_ id from the response id", () => {
    expect(events(encode([START]))[0]).toEqual({
      type: "message_start",
      message: {
        id: "msg_resp_0123",
        type: "message",
        role: "assistant",
        model: ALIAS,
        content: [],
        stop_reason: null,
        stop_sequence: null,
        usage: { input_tokens: 0, output_tokens: 0, cache_creation_input_tokens: 0, cache_read_input_tokens: 0, cache_creation: { ephemeral_5m_input_tokens: 0, ephemeral_1h_input_tokens: 0 } },
      },
    });
  });

  it("block starts are the empty blocks Anthropic sends; redacted thinking is whole at its start", () => {
    const starts = events(encode(SEQUENCES[2]!.deltas))
      .filter((e) => e.type === "content_block_start")
      .map((e) => e.content_block);
    expect(starts).toEqual([
      { type: "thinking", thinking: "", signature: "" },
      { type: "thinking", thinking: "", signature: "" },
      { type: "redacted_thinking", data: "opaque==" },
      { type: "text", text: "" },
      { type: "tool_use", id: "toolu_a", name: "weather", input: {} },
      { type: "tool_use", id: "toolu_b", name: "time", input: {} },
    ]);
  });

  it("maps finish reasons to stop reasons, with usage in message_delta", () => {
    const stops = (["stop", "length", "tool_calls", "content_filter", "other", "unspecified"] as const).map((reason) => {
      const out = events(encode([START, usage(30, 5, 10, 2), { type: "finish", reason }]));
      return out.find((e) => e.type === "message_delta");
    });
    expect(stops.map((e) => (e!.delta as { stop_reason: string }).stop_reason)).toEqual(["end_turn", "max_tokens", "tool_use", "refusal", "end_turn", "end_turn"]);
    expect(stops[0]).toEqual({
      type: "message_delta",
      delta: { stop_reason: "end_turn", stop_sequence: null },
      usage: { input_tokens: 20, output_tokens: 5, cache_creation_input_tokens: 0, cache_read_input_tokens: 10, cache_creation: { ephemeral_5m_input_tokens: 0, ephemeral_1h_input_tokens: 0 }, output_tokens_details: { thinking_tokens: 2 } },
    });
  });

  it("message_start carries the input usage the upstream stated up front; message_delta the whole, writes out of input_tokens", () => {
    const inputUsage = { inputTokens: 159_223 + 40, outputTokens: 0, cachedInputTokens: 40, reasoningTokens: 0, cacheWrite5mTokens: 159_000, cacheWrite1hTokens: 217 };
    const out = events(
      encode([
        { ...START, inputUsage },
        { type: "text", text: "hi" },
        { type: "usage", ...inputUsage, outputTokens: 2_745 },
        { type: "finish", reason: "stop" },
      ]),
    );
    const input = { input_tokens: 6, cache_creation_input_tokens: 159_217, cache_read_input_tokens: 40, cache_creation: { ephemeral_5m_input_tokens: 159_000, ephemeral_1h_input_tokens: 217 } };
    expect((out[0]!.message as { usage: unknown }).usage).toEqual({ ...input, output_tokens: 0 });
    expect(out.find((e) => e.type === "message_delta")!.usage).toEqual({ ...input, output_tokens: 2_745 });
  });

  it("a heartbeat is a ping event", () => {
    expect(encode([START, HEARTBEAT])[1]).toBe(PING_FRAME);
    expect(events([PING_FRAME])).toEqual([{ type: "ping" }]);
  });

  it("a text delta's frame is the JSON of its event, however its text is escaped", () => {
    const text = 'quote " backslash \\ newline \n tab \t unicode é 😀 </script>';
    const [, start, delta] = events(encode([START, { type: "text", text }]));
    expect(start).toEqual({ type: "content_block_start", index: 0, content_block: { type: "text", text: "" } });
    expect(delta).toEqual({ type: "content_block_delta", index: 0, delta: { type: "text_delta", text } });
  });
});

describe("an error after the stream began", () => {
  it("is an error event the SDK raises with its type and message, instead of a truncated message", async () => {
    const frames = [...encode([START, { type: "text", text: "Half an ans" }]), errorEvent(new GatewayError("upstream_unavailable", "provider up failed mid-stream"), "req_9")];
    expect(events(frames.slice(-1))).toEqual([{ type: "error", error: { type: "api_error", message: "provider up failed mid-stream" }, request_id: "req_9" }]);
    const thrown = await sdkFinalMessage(frames).catch((e: unknown) => e);
    expect(thrown).toBeInstanceOf(Anthropic.APIError);
    expect(thrown).toMatchObject({ type: "api_error", apiMessage: "provider up failed mid-stream" });
  });
});

describe("a whole answer (non-streaming)", () => {
  it("is a message with the blocks in Claude's order and the usage in Anthropic's terms", async () => {
    const result = await aggregateDeltas(from(SEQUENCES[2]!.deltas));
    expect(messageFromResult(result, ALIAS)).toEqual({
      id: "msg_resp_0123",
      type: "message",
      role: "assistant",
      model: ALIAS,
      content: [
        { type: "thinking", thinking: "First, weather.", signature: "sig-1" },
        { type: "thinking", thinking: "Then time.", signature: "sig-2" },
        { type: "redacted_thinking", data: "opaque==" },
        { type: "text", text: "Checking both." },
        { type: "tool_use", id: "toolu_a", name: "weather", input: { city: "Paris" } },
        { type: "tool_use", id: "toolu_b", name: "time", input: { tz: "CET" } },
      ],
      stop_reason: "tool_use",
      stop_sequence: null,
      usage: { input_tokens: 50, output_tokens: 80, cache_creation_input_tokens: 0, cache_read_input_tokens: 0, cache_creation: { ephemeral_5m_input_tokens: 0, ephemeral_1h_input_tokens: 0 } },
    });
  });

  it("refuses tool arguments that are not a JSON object, which input cannot carry", async () => {
    const result = await aggregateDeltas(from([START, { type: "tool_call", index: 0, id: "t", name: "f", arguments: "[1, 2" }, { type: "finish", reason: "tool_calls" }]));
    expect(() => messageFromResult(result, ALIAS)).toThrow(expect.objectContaining({ code: "upstream_protocol", provider: "up" }));
  });
});

describe("Anthropic upstream → Sluice → Anthropic client", () => {
  /** One upstream event as the Messages API sends it. */
  const ev = (type: string, data: Record<string, unknown> = {}) => `event: ${type}\ndata: ${JSON.stringify({ type, ...data })}\n\n`;
  const UPSTREAM = [
    ev("message_start", {
      message: { id: "msg_up", type: "message", role: "assistant", model: "claude-sonnet-5", content: [], stop_reason: null, stop_sequence: null, usage: { input_tokens: 25, cache_read_input_tokens: 100, output_tokens: 1 } },
    }),
    ev("content_block_start", { index: 0, content_block: { type: "thinking", thinking: "", signature: "" } }),
    ev("content_block_delta", { index: 0, delta: { type: "thinking_delta", thinking: "Paris, so " } }),
    ev("content_block_delta", { index: 0, delta: { type: "thinking_delta", thinking: "the weather tool." } }),
    ev("content_block_delta", { index: 0, delta: { type: "signature_delta", signature: "EqQBCkYIBxgCKkA" } }),
    ev("content_block_stop", { index: 0 }),
    ev("content_block_start", { index: 1, content_block: { type: "text", text: "" } }),
    ev("content_block_delta", { index: 1, delta: { type: "text_delta", text: "Let me check." } }),
    ev("content_block_stop", { index: 1 }),
    ev("ping"),
    ev("content_block_start", { index: 2, content_block: { type: "tool_use", id: "toolu_01", name: "weather", input: {} } }),
    ev("content_block_delta", { index: 2, delta: { type: "input_json_delta", partial_json: '{"city": ' } }),
    ev("content_block_delta", { index: 2, delta: { type: "input_json_delta", partial_json: '"Paris"}' } }),
    ev("content_block_stop", { index: 2 }),
    ev("message_delta", { delta: { stop_reason: "tool_use", stop_sequence: null }, usage: { output_tokens: 40 } }),
    ev("message_stop"),
  ];

  it("the client assembles the message the provider sent: blocks, signature, stop reason and usage", async () => {
    const direct = (await sdkFinalMessage(UPSTREAM)) as Anthropic.Message;
    const deltas = translateWire(() => createAnthropicTranslator(testTarget("anthropic")), UPSTREAM.join(""));
    const relayed = (await sdkFinalMessage(encode([START, ...deltas]))) as Anthropic.Message;
    expect(relayed.content).toEqual(direct.content);
    expect([relayed.stop_reason, relayed.stop_sequence]).toEqual([direct.stop_reason, direct.stop_sequence]);
    const counts = (m: Anthropic.Message) => [m.usage.input_tokens, m.usage.output_tokens, m.usage.cache_read_input_tokens];
    expect(counts(relayed)).toEqual(counts(direct));
    expect([relayed.id, relayed.model]).toEqual(["msg_resp_0123", ALIAS]);
  });
});
