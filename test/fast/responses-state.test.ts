import { describe, expect, it } from "vitest";
import type { ChatMessage } from "../../src/core/chat-request.js";
import type { Delta } from "../../src/core/delta.js";
import { GatewayError } from "../../src/core/errors.js";
import { replayForTarget } from "../../src/core/replay-origins.js";
import { responsesRequestFrom } from "../../src/edges/responses/from-responses.js";
import { keepResponse } from "../../src/edges/responses/keep-response.js";
import { DEFAULT_ECHO } from "../../src/edges/responses/response-object.js";
import { loadStoredContext } from "../../src/edges/responses/stored-input.js";
import { storedRecordOf } from "../../src/edges/responses/stored-record.js";
import { createResponseEncoder } from "../../src/edges/responses/to-responses.js";
import { chainTurns } from "../../src/edges/responses/with-history.js";
import type { Logger } from "../../src/logging/logger.js";
import { pageOf } from "../../src/response-state/item-page.js";
import { createMemoryResponseStore } from "../../src/response-state/memory-response-store.js";
import { placeOfItem } from "../../src/response-state/response-ids.js";
import type { ResponseState } from "../../src/response-state/response-state.js";
import type { ResponseStore } from "../../src/response-state/stored-response.js";
import { responsesSettings } from "./helpers/responses-settings.js";

const LIMITS = { maxJsonDepth: 64 };
const ID = `resp_${"ab".repeat(16)}`;
const SETTINGS = responsesSettings({ maxStoredPerKey: 0 });

/** A finished response to `deltas`, as the edge's encoder ends it. */
function answered(deltas: readonly Delta[], echo = DEFAULT_ECHO) {
  const encoder = createResponseEncoder({ requestModel: "sim", echo });
  for (const delta of [{ type: "start", responseId: ID, provider: "p", model: "m" } as const, ...deltas]) encoder.events(delta, () => undefined);
  return encoder.response();
}

const text = (t: string) => [{ type: "text", text: t }];

describe("storedRecordOf", () => {
  it("keeps the input items with ids that name their place, the response, and the turn without instructions", () => {
    const response = answered([
      { type: "text", text: "the answer" },
      { type: "finish", reason: "stop" },
    ]);
    const record = storedRecordOf({ response, owner: "key-1", input: [{ role: "user", content: "q" }], previousId: "resp_prev" });
    expect(record).toMatchObject({ id: ID, owner: "key-1", previousId: "resp_prev", status: "completed", createdAt: response.created_at });
    expect(record.input).toEqual([{ type: "message", role: "user", content: [{ type: "input_text", text: "q" }], id: `msg_${"ab".repeat(16)}_in0` }]);
    expect(placeOfItem(record.input[0]!.id as string)).toEqual({ kind: "input", responseId: ID, index: 0 });
    expect(record.turn?.messages).toEqual([
      { role: "user", content: text("q") },
      { role: "assistant", content: [{ type: "text", text: "the answer" }], toolCalls: undefined },
    ]);
  });

  it("a string input is one user message; a function call answer is a turn with its call", () => {
    const response = answered([
      { type: "tool_call", index: 0, id: "call_1", name: "lookup", arguments: "{}" },
      { type: "finish", reason: "tool_calls" },
    ]);
    const record = storedRecordOf({ response, owner: "", input: "hi" });
    expect(record.input[0]).toMatchObject({ type: "message", role: "user", content: [{ type: "input_text", text: "hi" }] });
    expect(record.turn?.messages.at(-1)).toMatchObject({ role: "assistant", toolCalls: [{ id: "call_1", name: "lookup", arguments: "{}" }] });
  });
});

describe("a chain's turns before the request", () => {
  const reply = (t: string): ChatMessage => ({
    role: "assistant",
    content: [
      { type: "reasoning", text: "", signature: "sig" },
      { type: "text", text: t },
    ],
  });
  const turn = (q: string, a: string) => ({ messages: [{ role: "user" as const, content: text(q) }, reply(a)] as ChatMessage[], origins: [{ message: 1, part: 0, provider: "p", model: "m" }] });

  it("go between this request's instructions and its input, their origins following their messages", () => {
    const history = chainTurns([turn("q1", "a1"), turn("q2", "a2")]);
    expect(history.origins.map((o) => o.message)).toEqual([1, 3]);
    const parsed = responsesRequestFrom({ model: "sim", input: "q3", instructions: "be brief" }, LIMITS, { stateful: true, history });
    expect(parsed.request.messages.map((m) => m.role)).toEqual(["system", "user", "assistant", "user", "assistant", "user"]);
    expect(parsed.origins.map((o) => o.message)).toEqual([2, 4]);
    expect(parsed.param("messages[2].content")).toBe("previous_response_id");
    // A signature from another target is left out, at the position the chain put it.
    const sent = replayForTarget(parsed.request, parsed.origins, { provider: "q", model: "m" });
    expect(sent.messages[2]!.content).toEqual(text("a1"));
  });

  it("origins follow their messages when a stage dropped the oldest turns", () => {
    const history = chainTurns([turn("q1", "a1"), turn("q2", "a2")]);
    const parsed = responsesRequestFrom({ model: "sim", input: "q3" }, LIMITS, { stateful: true, history });
    const truncated = { ...parsed.request, messages: parsed.request.messages.slice(2) };
    const sent = replayForTarget(truncated, parsed.origins, { provider: "q", model: "m" }, parsed.request.messages);
    expect(sent.messages.map((m) => m.content)).toEqual([text("q2"), text("a2"), text("q3")]);
  });

  it("store is true when absent only where the gateway keeps responses", () => {
    expect(responsesRequestFrom({ model: "sim", input: "q" }, LIMITS, { stateful: true }).store).toBe(true);
    expect(responsesRequestFrom({ model: "sim", input: "q", store: false }, LIMITS, { stateful: true }).store).toBe(false);
    expect(responsesRequestFrom({ model: "sim", input: "q" }, LIMITS).store).toBe(false);
    expect(() => responsesRequestFrom({ model: "sim", input: "q", store: true }, LIMITS)).toThrow(expect.objectContaining({ field: "store" }) as Error);
  });
});

describe("loading what a body names", () => {
  const state = (store: ResponseStore, maxChainDepth = 1_000): ResponseState => ({ store, settings: () => ({ ...SETTINGS, maxChainDepth }) });

  it("an unknown previous_response_id is a 404; a chain too deep is a 400", async () => {
    const store = createMemoryResponseStore({ maxStoredBytes: 0 });
    await expect(loadStoredContext({ model: "sim", input: "q", previous_response_id: ID }, "k", state(store))).rejects.toMatchObject({ code: "not_found", field: "previous_response_id" });
    const first = storedRecordOf({ response: answered([{ type: "finish", reason: "stop" }]), owner: "k", input: "q" });
    const secondId = `resp_${"cd".repeat(16)}`;
    await store.put(first, 60_000);
    await store.put({ ...first, id: secondId, previousId: ID }, 60_000);
    await expect(loadStoredContext({ model: "sim", input: "q", previous_response_id: secondId }, "k", state(store, 1))).rejects.toMatchObject({ code: "invalid_request", field: "previous_response_id" });
    await expect(loadStoredContext({ model: "sim", input: "q", previous_response_id: secondId }, "other", state(store))).rejects.toMatchObject({ code: "not_found" });
    const loaded = await loadStoredContext({ model: "sim", input: "q", previous_response_id: secondId }, "k", state(store));
    expect(loaded.stored.history?.messages).toHaveLength(2);
  });

  it("item references become the items they name; an unknown one is a 404 naming it", async () => {
    const store = createMemoryResponseStore({ maxStoredBytes: 0 });
    const record = storedRecordOf({
      response: answered([
        { type: "text", text: "a" },
        { type: "finish", reason: "stop" },
      ]),
      owner: "k",
      input: "q",
    });
    await store.put(record, 60_000);
    const outputId = (record.response.output as Array<{ id: string }>)[0]!.id;
    const loaded = await loadStoredContext(
      {
        model: "sim",
        input: [
          { type: "item_reference", id: outputId },
          { role: "user", content: "next" },
        ],
      },
      "k",
      state(store),
    );
    expect((loaded.body as { input: unknown[] }).input[0]).toMatchObject({ type: "message", role: "assistant", id: outputId });
    await expect(
      loadStoredContext(
        {
          model: "sim",
          input: [
            { role: "user", content: "x" },
            { type: "item_reference", id: "msg_nope" },
          ],
        },
        "k",
        state(store),
      ),
    ).rejects.toMatchObject({ code: "not_found", field: "input[1].id" });
  });
});

describe("keeping a response", () => {
  it("a put that fails is logged and answered false: the caller still sends the answer", async () => {
    const warnings: unknown[] = [];
    const failing: ResponseStore = {
      ...createMemoryResponseStore({ maxStoredBytes: 0 }),
      put: () => Promise.reject(new GatewayError("internal", "database down")),
    };
    const logger = { warn: (line: unknown) => warnings.push(line) } as unknown as Logger;
    const kept = await keepResponse({ store: failing, settings: () => SETTINGS, logger }, answered([{ type: "finish", reason: "stop" }]), { owner: "k", input: "secret prompt" }, "req-1");
    expect(kept).toBe(false);
    expect(warnings).toEqual([{ event: "responses.store_failed", requestId: "req-1", code: "internal", error: "database down" }]);
    expect(JSON.stringify(warnings)).not.toContain("secret prompt");
  });

  it("an unfinished response is not kept", async () => {
    const store = createMemoryResponseStore({ maxStoredBytes: 0 });
    expect(await keepResponse({ store, settings: () => SETTINGS }, answered([]), { owner: "k", input: "q" }, "r")).toBe(false);
    expect(await store.get(ID, "k")).toBeUndefined();
  });
});

describe("input_items pages", () => {
  const items = Array.from({ length: 5 }, (_, i) => ({ id: `i${i}` }));
  it("newest first by default, after an id, with has_more", () => {
    expect(pageOf(items, { limit: 2, order: "desc" })).toEqual({ items: [{ id: "i4" }, { id: "i3" }], hasMore: true });
    expect(pageOf(items, { limit: 2, order: "asc", after: "i2" })).toEqual({ items: [{ id: "i3" }, { id: "i4" }], hasMore: false });
    expect(() => pageOf(items, { limit: 2, order: "asc", after: "nope" })).toThrow(expect.objectContaining({ field: "after" }) as Error);
  });
});

describe("a run that has not ended", () => {
  it("is kept without a turn, so no chain continues it yet", () => {
    const record = storedRecordOf({ response: answered([]), owner: "k", input: "q", status: "queued" });
    expect(record.status).toBe("queued");
    expect(record.turn).toBeUndefined();
    expect(record.input).toHaveLength(1);
  });
});
