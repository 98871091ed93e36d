import { describe, expect, it } from "vitest";
import type { Delta } from "../../src/core/delta.js";
import { GatewayError } from "../../src/core/errors.js";
import { conversationTurn } from "../../src/edges/responses/conversation-turn.js";
import { responsesRequestFrom } from "../../src/edges/responses/from-responses.js";
import { createResponseEncoder } from "../../src/edges/responses/to-responses.js";
import type { SseCodec } from "../../src/edges/sse/write-sse.js";
import { createMemoryConversationStore } from "../../src/response-state/memory-conversation-store.js";
import { createMemoryResponseStore } from "../../src/response-state/memory-response-store.js";
import { newConversationId } from "../../src/response-state/response-ids.js";
import type { ResponseState } from "../../src/response-state/response-state.js";

/** `conversation` on a Responses request, in memory: joining, naming errors, and holding the end until the turn is kept. */

const LIMITS = { maxJsonDepth: 32, maxRequestElements: 20_000 };
const SETTINGS = { store: true, ttlDays: 30, maxStoredPerKey: 0, maxChainDepth: 100, sweepIntervalMs: 600_000 };
const user = (text: string) => ({ type: "message", role: "user", content: [{ type: "input_text", text }] });
const ANSWER: readonly Delta[] = [
  { type: "start", responseId: "resp_0123456789abcdef0123456789abcdef", provider: "p", model: "m" },
  { type: "text", text: "the answer" },
  { type: "finish", reason: "stop" },
];

async function withConversation(items: readonly Record<string, unknown>[]) {
  const conversations = createMemoryConversationStore();
  const state: ResponseState = { store: createMemoryResponseStore({ maxStoredBytes: 0 }), settings: () => SETTINGS as never, conversations };
  const id = newConversationId();
  await conversations.create({ id, owner: "", createdAt: 0, metadata: {} }, items, { ttlMs: 60_000, maxStoredBytes: 0 });
  return { state, conversations, id };
}

describe("a response in a conversation", () => {
  it("is refused by name when the gateway keeps no conversations", async () => {
    const parsed = responsesRequestFrom({ model: "sim", input: "hi", conversation: newConversationId() }, LIMITS);
    await expect(conversationTurn(parsed, undefined, undefined)).rejects.toMatchObject({ code: "invalid_request", field: "conversation", message: expect.stringContaining("keeps no conversations") });
  });

  it("starts from the conversation's items, instructions first", async () => {
    const { state, id } = await withConversation([user("earlier question"), { type: "message", role: "assistant", content: [{ type: "output_text", text: "earlier answer" }] }]);
    const parsed = responsesRequestFrom({ model: "sim", instructions: "be kind", input: "now", conversation: { id } }, LIMITS);
    const turn = await conversationTurn(parsed, undefined, state);
    expect(turn!.parsed.request.messages.map((m) => [m.role, m.content.map((p) => ("text" in p ? p.text : "")).join("")])).toEqual([
      ["system", "be kind"],
      ["user", "earlier question"],
      ["assistant", "earlier answer"],
      ["user", "now"],
    ]);
  });

  it("continues a tool loop: the call is in the conversation, the request sends only its output", async () => {
    const { state, id } = await withConversation([user("weather?"), { type: "function_call", call_id: "call_1", name: "get_weather", arguments: "{}" }]);
    const parsed = responsesRequestFrom({ model: "sim", input: [{ type: "function_call_output", call_id: "call_1", output: "sunny" }], conversation: id }, LIMITS);
    const turn = await conversationTurn(parsed, undefined, state);
    const messages = turn!.parsed.request.messages;
    expect(messages.map((m) => m.role)).toEqual(["user", "assistant", "tool"]);
    expect(messages[1]!.toolCalls?.[0]).toMatchObject({ id: "call_1", name: "get_weather" });
    expect(messages[2]!.toolCallId).toBe("call_1");
    // A failure the joined request finds names the caller's own items as sent.
    expect(turn!.parsed.param("input[2].output")).toBe("input[0].output");
    expect(turn!.parsed.param("input[1]")).toBe("conversation.items[1]");
  });

  it("holds back the terminal event until the turn is appended, then sends it", async () => {
    const { state, conversations, id } = await withConversation([user("one")]);
    const parsed = responsesRequestFrom({ model: "sim", input: "two", conversation: id, stream: true }, LIMITS);
    const turn = (await conversationTurn(parsed, undefined, state))!;
    const encoder = createResponseEncoder({ requestModel: "sim", echo: turn.parsed.echo });
    const inner: SseCodec = { events: (d, push) => encoder.events(d, push), heartbeat: "", dropped: (p) => p, end: () => undefined, failure: () => undefined, refuse: () => undefined };
    const codec = turn.sse(inner, encoder.response);
    const out: string[] = [];
    for (const delta of ANSWER) codec.events(delta, (part) => out.push(String(part)));
    expect(out.join("")).not.toContain("response.completed");
    expect(await conversations.allItems(id, "")).toHaveLength(1);
    await codec.beforeEnd();
    codec.end((part) => out.push(part));
    expect(out.join("")).toContain("response.completed");
    const items = await conversations.allItems(id, "");
    expect(items?.map((i) => [i.role, (i.content as Array<{ text: string }>)[0]!.text])).toEqual([
      ["user", "one"],
      ["user", "two"],
      ["assistant", "the answer"],
    ]);
  });

  it("ends with an error event, not the terminal one, when the conversation could not take the turn", async () => {
    const { state, conversations, id } = await withConversation([user("one")]);
    const parsed = responsesRequestFrom({ model: "sim", input: "two", conversation: id, stream: true }, LIMITS);
    const turn = (await conversationTurn(parsed, undefined, state))!;
    const encoder = createResponseEncoder({ requestModel: "sim", echo: turn.parsed.echo });
    const inner: SseCodec = { events: (d, push) => encoder.events(d, push), heartbeat: "", dropped: (p) => p, end: () => undefined, failure: () => undefined, refuse: () => undefined };
    const codec = turn.sse(inner, encoder.response);
    const out: string[] = [];
    for (const delta of ANSWER) codec.events(delta, (part) => out.push(String(part)));
    await conversations.delete(id, "");
    const failure = await codec.beforeEnd().then(
      () => undefined,
      (error: unknown) => error,
    );
    expect(failure).toBeInstanceOf(GatewayError);
    codec.failure(failure as GatewayError, (part) => out.push(part));
    const text = out.join("");
    expect(text).not.toContain("response.completed");
    expect(text).toContain("event: error");
    expect(text).toContain("not found");
  });
});
