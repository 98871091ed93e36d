import { describe, expect, it } from "vitest";
import type { ChatResult } from "../../src/core/aggregate.js";
import type { ChatMessage, ChatRequest } from "../../src/core/chat-request.js";
import type { Delta } from "../../src/core/delta.js";
import { replayForTarget } from "../../src/core/replay-origins.js";
import { storedCall } from "../../src/edges/grpc/stored-call.js";
import { storedRecord } from "../../src/edges/grpc/stored-record.js";
import { continueFrom } from "../../src/edges/grpc/stored-turns.js";
import { pageOf } from "../../src/response-state/item-page.js";
import { createMemoryResponseStore } from "../../src/response-state/memory-response-store.js";
import type { ResponseState } from "../../src/response-state/response-state.js";
import { responsesSettings } from "./helpers/responses-settings.js";

const user = (text: string): ChatMessage => ({ role: "user", content: [{ type: "text", text }] });
const system = (text: string): ChatMessage => ({ role: "system", content: [{ type: "text", text }] });
const request = (...messages: ChatMessage[]): ChatRequest => ({ model: "alias", messages, tools: [], sampling: { stop: [] }, metadata: { labels: {} } });
const ID_1 = `resp_${"1".repeat(32)}`;
const ID_2 = `resp_${"2".repeat(32)}`;

function result(id: string, fields: Partial<ChatResult> = {}): ChatResult {
  return { responseId: id, provider: "anthropic-main", model: "claude-x", text: "", reasoning: "", reasoningParts: [], toolCalls: [], logprobs: [], droppedParams: [], finishReason: "stop", ...fields };
}

function state(maxChainDepth = 10): ResponseState {
  const store = createMemoryResponseStore({ maxStoredBytes: 0 });
  return { store, settings: () => responsesSettings({ ttlDays: 1, maxStoredPerKey: 0, maxChainDepth }) };
}

describe("storedRecord", () => {
  it("numbers input items _in<n> and output items _<n>, leaves system messages out, and notes who signed the answer", () => {
    const signed = result(ID_1, {
      text: "Paris it is.",
      reasoning: "thinking",
      reasoningParts: [{ type: "reasoning", text: "thinking", signature: "sig-1" }],
      toolCalls: [{ id: "call_1", name: "get_weather", arguments: '{"city":"Paris"}' }],
    });
    const record = storedRecord({ owner: "key-a", request: request(system("Be brief."), user("weather?")), createdAt: 100 }, signed, 101);
    const hex = "1".repeat(32);
    expect(record.input.map((i) => i.id)).toEqual([`msg_${hex}_in0`]);
    expect((record.response.output as Array<{ id: string }>).map((i) => i.id)).toEqual([`rs_${hex}_0`, `msg_${hex}_1`, `fc_${hex}_2`]);
    expect(record.response.instructions).toBe("Be brief.");
    expect(record.turn?.messages.map((m) => m.role)).toEqual(["user", "assistant"]);
    expect(record.turn?.origins).toEqual([{ message: 1, part: 0, provider: "anthropic-main", model: "claude-x" }]);
  });

  it("an answer cut by its token limit is incomplete", () => {
    const record = storedRecord({ owner: "", request: request(user("long")), createdAt: 1 }, result(ID_1, { text: "cut", finishReason: "length" }), 2);
    expect([record.status, record.response.incomplete_details]).toEqual(["incomplete", { reason: "max_output_tokens" }]);
  });
});

describe("continueFrom", () => {
  it("puts the chain's turns after the system messages and before the new ones, origins moved with them", async () => {
    const s = state();
    const signed = result(ID_1, { text: "a1", reasoningParts: [{ type: "reasoning", text: "t", signature: "sig" }] });
    await s.store.put(storedRecord({ owner: "key-a", request: request(user("q1")), createdAt: 1 }, signed, 1), 60_000);
    await s.store.put(storedRecord({ owner: "key-a", request: request(user("q2")), previousId: ID_1, createdAt: 2 }, result(ID_2, { text: "a2" }), 2), 60_000);
    const continued = await continueFrom(s, ID_2, "key-a", request(system("sys"), user("q3")));
    expect(continued.request.messages.map((m) => [m.role, m.content[m.content.length - 1]])).toEqual([
      ["system", { type: "text", text: "sys" }],
      ["user", { type: "text", text: "q1" }],
      ["assistant", { type: "text", text: "a1" }],
      ["user", { type: "text", text: "q2" }],
      ["assistant", { type: "text", text: "a2" }],
      ["user", { type: "text", text: "q3" }],
    ]);
    expect(continued.origins).toEqual([{ message: 2, part: 0, provider: "anthropic-main", model: "claude-x" }]);
  });

  it("another key's id is NOT_FOUND; a chain past maxChainDepth is refused by name", async () => {
    const s = state(1);
    await s.store.put(storedRecord({ owner: "key-a", request: request(user("q1")), createdAt: 1 }, result(ID_1, { text: "a1" }), 1), 60_000);
    await s.store.put(storedRecord({ owner: "key-a", request: request(user("q2")), previousId: ID_1, createdAt: 2 }, result(ID_2, { text: "a2" }), 2), 60_000);
    await expect(continueFrom(s, ID_1, "key-b", request(user("x")))).rejects.toMatchObject({ code: "not_found", field: "previous_response_id" });
    await expect(continueFrom(s, "resp_\u0000", "key-a", request(user("x")))).rejects.toMatchObject({ code: "invalid_request", field: "previous_response_id" });
    await expect(continueFrom(s, ID_2, "key-a", request(user("x")))).rejects.toMatchObject({ code: "failed_precondition", field: "previous_response_id" });
  });
});

describe("replayForTarget on stored turns", () => {
  const turn: ChatMessage[] = [
    user("q"),
    { role: "assistant", content: [{ type: "reasoning", text: "", redactedData: "opaque" }], toolCalls: [{ id: "c1", name: "f", arguments: "{}", signature: "gem-sig" }] },
    { role: "assistant", content: [{ type: "reasoning", text: "", redactedData: "opaque-2" }] },
  ];
  const origins = [
    { message: 1, part: 0, provider: "anthropic-main", model: "claude-x" },
    { message: 1, call: 0, provider: "anthropic-main", model: "claude-x" },
    { message: 2, part: 0, provider: "anthropic-main", model: "claude-x" },
  ];

  it("the issuing target gets the turn as it was", () => {
    const r = request(...turn);
    expect(replayForTarget(r, origins, { provider: "anthropic-main", model: "claude-x" })).toBe(r);
  });

  it("another target gets no foreign reasoning or call signature, and no message left empty", () => {
    const out = replayForTarget(request(...turn), origins, { provider: "openai-main", model: "gpt-x" });
    expect(out.messages).toEqual([user("q"), { role: "assistant", content: [], toolCalls: [{ id: "c1", name: "f", arguments: "{}" }] }]);
  });
});

describe("pageOf", () => {
  const items = ["a", "b", "c"].map((id) => ({ id }));
  it("newest first unless asked, after an id, with has_more", () => {
    expect(pageOf(items, { limit: 2, order: "desc" })).toEqual({ items: [{ id: "c" }, { id: "b" }], hasMore: true });
    expect(pageOf(items, { limit: 2, order: "asc", after: "b" })).toEqual({ items: [{ id: "c" }], hasMore: false });
    expect(() => pageOf(items, { limit: 2, order: "asc", after: "z" })).toThrow("after: names no item of this response");
  });
});

describe("storedCall", () => {
  const deltas: Delta[] = [
    { type: "start", responseId: ID_1, provider: "p", model: "m" },
    { type: "text", text: "hello" },
    { type: "finish", reason: "stop" },
  ];

  it("keeps the answer once finish is seen, under the caller's key id", async () => {
    const s = state();
    const call = await storedCall(s, { store: true, previousResponseId: "" }, request(user("hi")), undefined);
    for (const d of deltas) call.options.observe?.(d);
    await call.keep();
    expect((await s.store.get(ID_1, ""))?.turn?.messages.at(-1)).toEqual({ role: "assistant", content: [{ type: "text", text: "hello" }] });
  });

  it("keeps nothing for a stream that did not finish, or without store", async () => {
    const s = state();
    const cut = await storedCall(s, { store: true, previousResponseId: "" }, request(user("hi")), undefined);
    for (const d of deltas.slice(0, 2)) cut.options.observe?.(d);
    await cut.keep();
    const plain = await storedCall(s, { previousResponseId: "" }, request(user("hi")), undefined);
    expect(plain.options.observe).toBeUndefined();
    expect(await s.store.get(ID_1, "")).toBeUndefined();
  });

  it("without a store, store and previous_response_id are refused by name", async () => {
    await expect(storedCall(undefined, { store: true, previousResponseId: "" }, request(user("hi")), undefined)).rejects.toMatchObject({ code: "failed_precondition", field: "store" });
    await expect(storedCall(undefined, { previousResponseId: ID_1 }, request(user("hi")), undefined)).rejects.toMatchObject({ code: "failed_precondition", field: "previous_response_id" });
  });
});
