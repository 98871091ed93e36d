import OpenAI, { type APIError, NotFoundError } from "openai";
import type { Response, ResponseFunctionToolCall, ResponseInputItem } from "openai/resources/responses/responses";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { adminClient } from "./helpers/admin.js";
import { baseUrlFor, FAR_TIMEOUTS, type Harness, type ProviderKind, startHarness } from "./helpers/harness.js";

/**
 * Stored responses through the Responses edge (issue 46), with the openai
 * SDK's own methods over real sockets, on every upstream wire: chains of
 * `previous_response_id`, a tool loop continued by one, `item_reference`,
 * `store: false`, retrieve / input_items / delete, and ownership by key id
 * (two keys on every endpoint; a key revoked and its name reused).
 */
const WIRES: readonly ProviderKind[] = ["openai", "anthropic", "gemini", "openai-responses"];
const ADMIN_KEY = "sk-test-admin-state-7e1c9a3b5d2f4806";
const KEY_A = "sk-test-state-a-0b1c2d3e4f5a6b7c";
const KEY_B = "sk-test-state-b-8a9b0c1d2e3f4a5b";
/** A window small enough that a 30-turn conversation passes it, large enough for its last turns. */
const WINDOW = 1_500;

const harnesses = new Map<ProviderKind, Harness>();
beforeAll(async () => {
  for (const kind of WIRES) {
    harnesses.set(
      kind,
      await startHarness({
        routing: (sim) => ({
          providers: { simulator: { kind, baseUrl: baseUrlFor(sim, kind), breaker: { failures: 10_000 }, timeouts: FAR_TIMEOUTS } },
          models: {
            sim: { provider: "simulator", model: "sim-1?tokens=4" },
            small: { provider: "simulator", model: "sim-1?tokens=4", capabilities: { contextWindow: WINDOW } },
          },
        }),
        env: { SLUICE_ADMIN_KEY: ADMIN_KEY, KEY_A, KEY_B },
        auth: {
          adminKeyEnv: "SLUICE_ADMIN_KEY",
          keys: [
            { name: "a", keyEnv: "KEY_A" },
            { name: "b", keyEnv: "KEY_B" },
          ],
        },
      }),
    );
  }
});
afterAll(async () => {
  for (const h of harnesses.values()) await h.close();
});

const client = (h: Harness, key = KEY_A) => new OpenAI({ baseURL: `${h.url}/v1`, apiKey: key, maxRetries: 0 });

async function rejection(promise: Promise<unknown>): Promise<APIError> {
  return promise.then(
    () => {
      throw new Error("expected a refusal");
    },
    (error: unknown) => error as APIError,
  );
}

/** The upstream body of the request tagged `tag`, as text (every wire names its messages differently). */
async function upstreamText(h: Harness, tag: string): Promise<string> {
  const record = await h.sim.records.waitFor((r) => r.tag === tag, 30_000);
  return JSON.stringify(record.body);
}

/** The 404 of a `previous_response_id` that names nothing the key may continue, in OpenAI's shape. */
function expectPreviousNotFound(error: APIError, id: string): void {
  expect(error).toBeInstanceOf(NotFoundError);
  expect(error.error).toEqual({ message: `Previous response with id '${id}' not found.`, type: "invalid_request_error", param: "previous_response_id", code: "previous_response_not_found" });
}

describe.each(WIRES)("stored responses, upstream wire %s", (wire) => {
  const h = () => harnesses.get(wire)!;

  it("a chain of 20 turns by previous_response_id: each turn sends the whole conversation upstream, instructions not inherited", async () => {
    const sdk = client(h());
    let previous: Response | undefined;
    const answers: string[] = [];
    for (let turn = 1; turn <= 20; turn++) {
      const tag = `${wire}-chain-${turn}`;
      const fields = {
        model: "sim",
        input: `question number ${turn}\n#sim tag=${tag}`,
        ...(previous ? { previous_response_id: previous.id } : {}),
        ...(turn === 1 ? { instructions: "FIRST-INSTRUCTIONS" } : turn === 20 ? { instructions: "LAST-INSTRUCTIONS" } : {}),
      };
      // Streamed and whole turns alternate: both keep the response before their end.
      const response: Response = turn % 2 === 0 ? await sdk.responses.stream(fields).finalResponse() : await sdk.responses.create(fields);
      expect(response.status).toBe("completed");
      // Not in the SDK's Response type, which has it only on the request.
      expect((response as { store?: boolean }).store).toBe(true);
      expect(response.previous_response_id).toBe(previous?.id ?? null);
      answers.push(response.output_text);
      previous = response;
    }
    const sent = await upstreamText(h(), `${wire}-chain-20`);
    for (let turn = 1; turn <= 20; turn++) expect(sent).toContain(`question number ${turn}`);
    for (const answer of answers.slice(0, 19)) expect(sent).toContain(answer);
    expect(sent).toContain("LAST-INSTRUCTIONS");
    expect(sent).not.toContain("FIRST-INSTRUCTIONS");
    const second = await upstreamText(h(), `${wire}-chain-2`);
    expect(second).toContain("question number 1");
    expect(second).not.toContain("FIRST-INSTRUCTIONS");
    // The stored response is the one the client saw.
    const got = await sdk.responses.retrieve(previous!.id);
    expect(got).toMatchObject({ id: previous!.id, status: "completed", instructions: "LAST-INSTRUCTIONS", output_text: previous!.output_text });
  });

  it("a function-tool loop continued by previous_response_id with only the function_call_output", async () => {
    const sdk = client(h());
    const tools = [{ type: "function" as const, name: "lookup", description: "Look a code up", parameters: { type: "object", properties: { code: { type: "string" } } }, strict: false }];
    const first = await sdk.responses.create({ model: "sim", input: "look it up\n#sim tools=1", tools });
    const call = first.output.find((item): item is ResponseFunctionToolCall => item.type === "function_call");
    expect(call?.name).toBe("lookup");
    const second = await sdk.responses.create({
      model: "sim",
      previous_response_id: first.id,
      tools,
      input: [{ type: "function_call_output", call_id: call!.call_id, output: "RESULT-7Q2" }],
    });
    expect(second.output_text).toContain("lookup returned: RESULT-7Q2");
  });

  it("item_reference resolves to the stored output and input items, as if sent inline", async () => {
    const sdk = client(h());
    const first = await sdk.responses.create({ model: "sim", input: [{ role: "user", content: "first question" }] });
    const inputs = await sdk.responses.inputItems.list(first.id);
    expect(inputs.data).toHaveLength(1);
    const tag = `${wire}-ref`;
    const input: ResponseInputItem[] = [
      { type: "item_reference", id: inputs.data[0]!.id },
      { type: "item_reference", id: first.output[0]!.id! },
      { role: "user", content: `second question\n#sim tag=${tag}` },
    ];
    const second = await sdk.responses.create({ model: "sim", input });
    expect(second.status).toBe("completed");
    const sent = await upstreamText(h(), tag);
    expect(sent).toContain("first question");
    expect(sent).toContain(first.output_text);
    // The second response's own input items are the referenced items themselves, under ids of its own.
    const listed = await sdk.responses.inputItems.list(second.id, { order: "asc" });
    expect(listed.data.map((i) => i.type)).toEqual(["message", "message", "message"]);
    expect(new Set(listed.data.map((i) => i.id)).size).toBe(3);

    const unknown = await rejection(
      sdk.responses.create({
        model: "sim",
        input: [
          { role: "user", content: "q" },
          { type: "item_reference", id: "msg_00000000000000000000000000000000_0" },
        ],
      }),
    );
    expect(unknown).toBeInstanceOf(NotFoundError);
    expect(unknown.param).toBe("input[1].id");
  });

  it("store: false keeps nothing: not retrievable, not continued", async () => {
    const sdk = client(h());
    const response = await sdk.responses.create({ model: "sim", input: "forget me", store: false });
    expect((response as { store?: boolean }).store).toBe(false);
    expect(await rejection(sdk.responses.retrieve(response.id))).toBeInstanceOf(NotFoundError);
    expectPreviousNotFound(await rejection(sdk.responses.create({ model: "sim", input: "next", previous_response_id: response.id })), response.id);
    expect(await rejection(sdk.responses.create({ model: "sim", input: [{ type: "item_reference", id: response.output[0]!.id! }] }))).toBeInstanceOf(NotFoundError);
  });
});

describe("retrieve, input_items and delete", () => {
  const h = () => harnesses.get("openai")!;

  it("input_items pages with after, limit and order, as the SDK walks them", async () => {
    const sdk = client(h());
    const input: ResponseInputItem[] = Array.from({ length: 5 }, (_, i) => ({ role: "user" as const, content: `part ${i}` }));
    const response = await sdk.responses.create({ model: "sim", input });
    const asc: string[] = [];
    for await (const item of sdk.responses.inputItems.list(response.id, { limit: 2, order: "asc" })) asc.push(item.type === "message" && Array.isArray(item.content) ? JSON.stringify(item.content) : "");
    expect(asc).toHaveLength(5);
    expect(asc[0]).toContain("part 0");
    expect(asc[4]).toContain("part 4");
    const page = await sdk.responses.inputItems.list(response.id, { limit: 2 });
    expect(page.data).toHaveLength(2);
    expect(page.has_more).toBe(true);
    expect(JSON.stringify(page.data[0])).toContain("part 4");
    const raw = await fetch(`${h().url}/v1/responses/${response.id}/input_items?limit=101`, { headers: { authorization: `Bearer ${KEY_A}` } });
    expect(raw.status).toBe(400);
  });

  it("delete removes it for every later read", async () => {
    const sdk = client(h());
    const response = await sdk.responses.create({ model: "sim", input: "short-lived" });
    const deleted = await fetch(`${h().url}/v1/responses/${response.id}`, { method: "DELETE", headers: { authorization: `Bearer ${KEY_A}` } });
    expect(await deleted.json()).toEqual({ id: response.id, object: "response", deleted: true });
    expect(await rejection(sdk.responses.retrieve(response.id))).toBeInstanceOf(NotFoundError);
    expect(await rejection(sdk.responses.delete(response.id))).toBeInstanceOf(NotFoundError);
    expectPreviousNotFound(await rejection(sdk.responses.create({ model: "sim", input: "next", previous_response_id: response.id })), response.id);
  });
});

describe("ownership by key id", () => {
  const h = () => harnesses.get("openai")!;

  /** Every way one key could reach `response`: each is the same 404 as an unknown id. */
  async function expectUnreachable(sdk: OpenAI, response: Response): Promise<void> {
    expect(await rejection(sdk.responses.retrieve(response.id))).toBeInstanceOf(NotFoundError);
    expect(await rejection(sdk.responses.inputItems.list(response.id))).toBeInstanceOf(NotFoundError);
    expect(await rejection(sdk.responses.delete(response.id))).toBeInstanceOf(NotFoundError);
    expectPreviousNotFound(await rejection(sdk.responses.create({ model: "sim", input: "next", previous_response_id: response.id })), response.id);
    expectPreviousNotFound(await rejection(sdk.responses.stream({ model: "sim", input: "next", previous_response_id: response.id }).finalResponse()), response.id);
    const ref = await rejection(sdk.responses.create({ model: "sim", input: [{ type: "item_reference", id: response.output[0]!.id! }] }));
    expect(ref).toBeInstanceOf(NotFoundError);
    expect(ref.param).toBe("input[0].id");
  }

  it("another key gets the same 404 as an unknown id on every endpoint, and the owner's response is untouched", async () => {
    const response = await client(h(), KEY_A).responses.create({ model: "sim", input: "mine" });
    await expectUnreachable(client(h(), KEY_B), response);
    expect((await client(h(), KEY_A).responses.retrieve(response.id)).id).toBe(response.id);
    const unknownId = "resp_00000000000000000000000000000000";
    const unknown = await rejection(client(h(), KEY_B).responses.retrieve(unknownId));
    const notYours = await rejection(client(h(), KEY_B).responses.retrieve(response.id));
    expect(notYours.status).toBe(unknown.status);
    expect(notYours.error).toEqual({ ...(unknown.error as object), message: `Response with id '${response.id}' not found.` });
  });

  it("a runtime key revoked and a new key under the same name sees none of the old key's responses", async () => {
    const admin = adminClient(h().url, ADMIN_KEY);
    const old = (await admin.createKey({ name: "reused-state" })).key;
    const response = await client(h(), old).responses.create({ model: "sim", input: "old key's" });
    await admin.revokeKey({ name: "reused-state" });
    const fresh = (await admin.createKey({ name: "reused-state" })).key;
    await expectUnreachable(client(h(), fresh), response);
  });
});

describe("truncation: auto", () => {
  const h = () => harnesses.get("openai")!;

  it("drops the oldest whole turns of a chain to fit the target's window and says so; without it the same request is refused", async () => {
    const sdk = client(h());
    let previous: Response | undefined;
    for (let turn = 1; turn <= 30; turn++) {
      previous = await sdk.responses.create({ model: "sim", input: `turn ${turn}: ${"many words of padding ".repeat(6)}`, ...(previous ? { previous_response_id: previous.id } : {}) });
    }
    const refused = await rejection(sdk.responses.create({ model: "small", input: "and now?", previous_response_id: previous!.id }));
    expect(refused.status).toBe(400);
    const { data, response } = await sdk.responses.create({ model: "small", input: "and now?\n#sim tag=truncated-chain", previous_response_id: previous!.id, truncation: "auto" }).withResponse();
    expect(data.truncation).toBe("auto");
    expect(response.headers.get("sluice-context")).toMatch(/^truncated=[1-9]\d*$/);
    const sent = await upstreamText(h(), "truncated-chain");
    expect(sent).toContain("turn 30:");
    expect(sent).not.toContain("turn 1:");
  });
});

describe("a response that cannot be kept", () => {
  let full: Harness;
  beforeAll(async () => {
    // One byte per key: every put is refused by the store, as an unreachable database would refuse it.
    full = await startHarness({ models: { sim: "sim-1?tokens=4" }, responses: { maxStoredPerKey: 1 } });
  });
  afterAll(() => full.close());

  it("is still answered whole, streamed or not; the gateway warns, and the response is not retrievable", async () => {
    const sdk = new OpenAI({ baseURL: `${full.url}/v1`, apiKey: "unused", maxRetries: 0 });
    const whole = await sdk.responses.create({ model: "sim", input: "a secret question" });
    const streamed = await sdk.responses.stream({ model: "sim", input: "a secret question" }).finalResponse();
    for (const response of [whole, streamed]) {
      expect(response.status).toBe("completed");
      expect(response.output_text).not.toBe("");
      await full.waitForLog((l) => l.event === "responses.store_failed" && l.code === "failed_precondition");
      expect(await rejection(sdk.responses.retrieve(response.id))).toBeInstanceOf(NotFoundError);
    }
    expect(full.logText()).not.toContain("a secret question");
  });
});
