import { execFile } from "node:child_process";
import { promisify } from "node:util";
import { create, fromBinary, toBinary } from "@bufbuild/protobuf";
import { Code, createClient } from "@connectrpc/connect";
import { createGrpcTransport } from "@connectrpc/connect-node";
import * as grpc from "@grpc/grpc-js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { MessageSchema, Role } from "../gen/sluice/v1/chat_pb.js";
import { StreamChatRequestSchema, type StreamChatResponse } from "../gen/sluice/v1/chat_service_pb.js";
import { type GetResponseRequest, GetResponseRequestSchema, type GetResponseResponse, GetResponseResponseSchema, ListOrder, ResponsesService, StoredResponseStatus } from "../gen/sluice/v1/responses_service_pb.js";
import { chatClient, collect, grpcJsStream, rpcFailure, streamAndDrop, textOf, transports, unary, userRequest } from "./helpers/clients.js";
import { type Harness, startHarness } from "./helpers/harness.js";

const run = promisify(execFile);
const KEY_A = "sk-test-stored-a-6b2e9d41c07f3a58";
const KEY_B = "sk-test-stored-b-1f8c3e7a2d9b4065";
const WEATHER = { name: "get_weather", description: "The weather in a city", parameters: { type: "object", properties: { city: { type: "string" } }, required: ["city"] } };

let h: Harness;
beforeAll(async () => {
  h = await startHarness({
    models: { echo: "sim-1?echo=1", tool: "sim-1?tokens=2&tools=1&seed=3", plain: "sim-1?tokens=3" },
    env: { KEY_A, KEY_B },
    auth: {
      keys: [
        { name: "team-a", keyEnv: "KEY_A" },
        { name: "team-b", keyEnv: "KEY_B" },
      ],
    },
  });
});
afterAll(() => h.close());

const as = (key: string) => ({ headers: { authorization: `Bearer ${key}` } });
const transport = () => createGrpcTransport({ baseUrl: h.url });
const chat = () => chatClient(transport());
const responses = () => createClient(ResponsesService, transport());

const text = (role: Role, value: string) => create(MessageSchema, { role, content: [{ part: { case: "text", value } }] });

function idOf(messages: readonly StreamChatResponse[]): string {
  const start = messages[0]?.delta;
  if (start?.case !== "start") throw new Error("the stream did not begin with StreamStart");
  return start.value.responseId;
}

/** What the simulator received for the request tagged `tag`: its messages' roles and texts. */
async function sentTurns(tag: string): Promise<Array<[string, string]>> {
  const body = (await h.sim.records.waitFor((r) => r.tag === tag, 30_000)).body as { messages: Array<{ role: string; content: unknown; tool_calls?: unknown[] }> };
  return body.messages.map((m) => [m.role, typeof m.content === "string" ? m.content : m.tool_calls ? "(calls)" : JSON.stringify(m.content)]);
}

/** A grpc-js unary call of ResponsesService/GetResponse: a client nobody here wrote. */
function grpcJsGet(request: GetResponseRequest, key: string): Promise<GetResponseResponse> {
  const client = new grpc.Client(new URL(h.url).host, grpc.credentials.createInsecure());
  const metadata = new grpc.Metadata();
  metadata.set("authorization", `Bearer ${key}`);
  return new Promise<GetResponseResponse>((resolve, reject) => {
    client.makeUnaryRequest(
      "/sluice.v1.ResponsesService/GetResponse",
      (m: GetResponseRequest) => Buffer.from(toBinary(GetResponseRequestSchema, m)),
      (b: Buffer) => fromBinary(GetResponseResponseSchema, b),
      request,
      metadata,
      (error, value) => (error || !value ? reject(error) : resolve(value)),
    );
  }).finally(() => client.close());
}

describe("store and previous_response_id on ChatService", () => {
  it("a stored stream is continued by its id: the simulator gets the earlier turn before the new message", async () => {
    const first = await collect(chat().streamChat(userRequest("echo", "#sim tag=stored-1\nthe first question", { store: true }), as(KEY_A)));
    expect(textOf(first)).toBe("the first question");
    const id = idOf(first);
    expect(id).toMatch(/^resp_[0-9a-f]{32}$/);

    const second = await collect(chat().streamChat(userRequest("echo", "#sim tag=stored-2\nthe second", { store: true, previousResponseId: id }), as(KEY_A)));
    expect(textOf(second)).toBe("the second");
    expect(await sentTurns("stored-2")).toEqual([
      ["user", "#sim tag=stored-1\nthe first question"],
      ["assistant", "the first question"],
      ["user", "#sim tag=stored-2\nthe second"],
    ]);

    // The third turn through @grpc/grpc-js, unary Chat and the lean streaming path alike.
    const metadata = new grpc.Metadata();
    metadata.set("authorization", `Bearer ${KEY_A}`);
    const third = grpcJsStream(h.url, userRequest("echo", "#sim tag=stored-3\nthe third", { store: true, previousResponseId: idOf(second) }), { metadata });
    try {
      expect(textOf(await third.messages)).toBe("the third");
    } finally {
      third.close();
    }
    expect((await sentTurns("stored-3")).map(([role]) => role)).toEqual(["user", "assistant", "user", "assistant", "user"]);
  });

  it("unary Chat stores too, and a system message stays first without being inherited", async () => {
    const request = userRequest("echo", "#sim tag=unary-1\nremember me", { store: true });
    request.messages.unshift(text(Role.SYSTEM, "Be brief."));
    const answer = await chat().chat(unary(request), as(KEY_A));
    expect(answer.text).toBe("remember me");
    const next = await chat().chat(unary(userRequest("echo", "#sim tag=unary-2\nand now", { previousResponseId: answer.responseId })), as(KEY_A));
    expect(next.text).toBe("and now");
    expect(await sentTurns("unary-2")).toEqual([
      ["user", "#sim tag=unary-1\nremember me"],
      ["assistant", "remember me"],
      ["user", "#sim tag=unary-2\nand now"],
    ]);
    const stored = await responses().getResponse({ responseId: answer.responseId }, as(KEY_A));
    expect(stored.response?.instructions).toBe("Be brief.");
    // Sent without store: read, not kept.
    expect((await rpcFailure(responses().getResponse({ responseId: next.responseId }, as(KEY_A)))).code).toBe(Code.NotFound);
  });

  it("a stored tool call is continued with its result alone: the model quotes it", async () => {
    const first = await collect(chat().streamChat(userRequest("tool", "#sim tag=tool-1\nweather in Paris?", { store: true, tools: [WEATHER] }), as(KEY_A)));
    const calls = first.flatMap((m) => (m.delta.case === "toolCall" && m.delta.value.id !== "" ? [m.delta.value.id] : []));
    expect(calls).toHaveLength(1);
    const result = create(StreamChatRequestSchema, {
      model: "tool",
      tools: [WEATHER],
      previousResponseId: idOf(first),
      messages: [{ role: Role.TOOL, toolCallId: calls[0]!, content: [{ part: { case: "text", value: "sunny, 24 °C" } }] }],
    });
    const second = await collect(chat().streamChat(result, as(KEY_A)));
    expect(textOf(second)).toContain("get_weather returned: sunny, 24 °C");

    const stored = await responses().getResponse({ responseId: idOf(first) }, as(KEY_A));
    const hex = idOf(first).slice("resp_".length);
    const output = stored.response?.output as Array<Record<string, unknown>>;
    expect(output.map((item) => [item.type, item.id])).toEqual([
      ["message", `msg_${hex}_0`],
      ["function_call", `fc_${hex}_1`],
    ]);
    expect(output[1]).toMatchObject({ call_id: calls[0], name: "get_weather", status: "completed" });
  });
});

describe("ResponsesService", () => {
  let id = "";
  beforeAll(async () => {
    const request = userRequest("plain", "three", { store: true });
    // A conversation of four own messages: pages of input items to walk.
    request.messages.unshift(text(Role.USER, "one"), text(Role.ASSISTANT, "two"));
    id = idOf(await collect(chat().streamChat(request, as(KEY_A))));
  });

  it("GetResponse: status, alias and the Responses API's object", async () => {
    const got = await responses().getResponse({ responseId: id }, as(KEY_A));
    expect(got.responseId).toBe(id);
    expect(got.status).toBe(StoredResponseStatus.COMPLETED);
    expect(got.model).toBe("plain");
    expect(got.previousResponseId).toBe("");
    expect(got.response).toMatchObject({ id, object: "response", status: "completed", model: "plain", store: true, previous_response_id: null });
    expect(got.response?.usage).toMatchObject({ output_tokens: expect.any(Number), input_tokens: expect.any(Number) });
  });

  it("ListResponseItems pages the request's own messages, newest first by default", async () => {
    const hex = id.slice("resp_".length);
    const all = await responses().listResponseItems({ responseId: id }, as(KEY_A));
    expect(all.items.map((i) => i.id)).toEqual([`msg_${hex}_in2`, `msg_${hex}_in1`, `msg_${hex}_in0`]);
    expect(all.items[0]).toMatchObject({ type: "message", role: "user", content: [{ type: "input_text", text: "three" }] });
    expect(all.items[1]).toMatchObject({ role: "assistant", content: [{ type: "output_text", text: "two" }] });
    const page = await responses().listResponseItems({ responseId: id, order: ListOrder.ASC, limit: 2 }, as(KEY_A));
    expect([page.items.map((i) => i.id), page.hasMore, page.lastId]).toEqual([[`msg_${hex}_in0`, `msg_${hex}_in1`], true, `msg_${hex}_in1`]);
    const rest = await responses().listResponseItems({ responseId: id, order: ListOrder.ASC, limit: 2, after: page.lastId }, as(KEY_A));
    expect([rest.items.map((i) => i.id), rest.hasMore]).toEqual([[`msg_${hex}_in2`], false]);
  });

  it("every connect-es transport reads it (gRPC, gRPC-Web, Connect; HTTP/1.1 and h2)", async () => {
    for (const [name, t] of Object.entries(transports(h.url))) {
      const got = await createClient(ResponsesService, t).getResponse({ responseId: id }, as(KEY_A));
      expect([name, got.responseId]).toEqual([name, id]);
    }
  });

  it("@grpc/grpc-js reads the same response", async () => {
    const got = await grpcJsGet(create(GetResponseRequestSchema, { responseId: id }), KEY_A);
    expect([got.responseId, got.model]).toEqual([id, "plain"]);
  });

  it("another key gets NOT_FOUND on every method and as previous_response_id, and the owner still reads it", async () => {
    const b = as(KEY_B);
    for (const call of [
      () => responses().getResponse({ responseId: id }, b),
      () => responses().listResponseItems({ responseId: id }, b),
      () => responses().deleteResponse({ responseId: id }, b),
      () => collect(chat().streamChat(userRequest("plain", "hi", { previousResponseId: id }), b)),
      () => chat().chat(unary(userRequest("plain", "hi", { previousResponseId: id, store: true })), b),
    ]) {
      const error = await rpcFailure(call());
      expect(error.code).toBe(Code.NotFound);
      expect(error.rawMessage).toMatch(/^(response_id|previous_response_id): no stored response resp_[0-9a-f]{32} for this key/);
    }
    expect((await responses().getResponse({ responseId: id }, as(KEY_A))).responseId).toBe(id);
  });

  it("DeleteResponse: gone for reads, for continuing, and for a second delete", async () => {
    const own = idOf(await collect(chat().streamChat(userRequest("plain", "delete me", { store: true }), as(KEY_A))));
    const after = idOf(await collect(chat().streamChat(userRequest("plain", "and me", { store: true, previousResponseId: own }), as(KEY_A))));
    await responses().deleteResponse({ responseId: own }, as(KEY_A));
    expect((await rpcFailure(responses().getResponse({ responseId: own }, as(KEY_A)))).code).toBe(Code.NotFound);
    expect((await rpcFailure(responses().deleteResponse({ responseId: own }, as(KEY_A)))).code).toBe(Code.NotFound);
    expect((await rpcFailure(collect(chat().streamChat(userRequest("plain", "hi", { previousResponseId: own }), as(KEY_A))))).code).toBe(Code.NotFound);
    // A response after it is still there, but its chain is broken: continuing it is refused by name, not as unknown.
    const broken = await rpcFailure(collect(chat().streamChat(userRequest("plain", "hi", { previousResponseId: after }), as(KEY_A))));
    expect([broken.code, broken.rawMessage]).toEqual([Code.FailedPrecondition, expect.stringMatching(/^previous_response_id: /)]);
  });

  it("a malformed id is INVALID_ARGUMENT, and without store nothing is kept", async () => {
    expect((await rpcFailure(responses().getResponse({ responseId: "resp_nope" }, as(KEY_A)))).code).toBe(Code.InvalidArgument);
    const unstored = idOf(await collect(chat().streamChat(userRequest("plain", "forget me"), as(KEY_A))));
    expect((await rpcFailure(responses().getResponse({ responseId: unstored }, as(KEY_A)))).code).toBe(Code.NotFound);
    const alsoUnstored = idOf(await collect(chat().streamChat(userRequest("plain", "me too", { store: false }), as(KEY_A))));
    expect((await rpcFailure(responses().getResponse({ responseId: alsoUnstored }, as(KEY_A)))).code).toBe(Code.NotFound);
  });

  it("buf curl reaches it through server reflection", async () => {
    const { stdout } = await run(
      "node_modules/.bin/buf",
      ["curl", "--protocol", "grpc", "--http2-prior-knowledge", "-H", `Authorization: Bearer ${KEY_A}`, "--data", JSON.stringify({ responseId: id }), `${h.url}/sluice.v1.ResponsesService/GetResponse`],
      { timeout: 60_000 },
    );
    const got = JSON.parse(stdout) as { responseId: string; status: string; response: { model: string } };
    expect([got.responseId, got.status, got.response.model]).toEqual([id, "STORED_RESPONSE_STATUS_COMPLETED", "plain"]);
  });
});

describe("store with a resumable stream", () => {
  it("a client that left before the end still has its response kept; resumed, it reads it", async () => {
    const request = userRequest("plain", "#sim tokens=12 hold_at=6 tag=stored-resume", { store: true, streamOptions: { resumable: true } });
    const first = await streamAndDrop(chat(), request, 2, as(KEY_A).headers);
    const id = idOf(first);
    await h.sim.records.waitFor((r) => r.tag === "stored-resume" && r.heldAt !== undefined, 30_000);
    const resumed = collect(chat().resumeStream({ responseId: id, afterSequence: first.at(-1)!.sequence }, as(KEY_A)));
    h.sim.records.release("stored-resume");
    const rest = await resumed;
    expect(rest.at(-1)?.delta.case).toBe("finish");
    const stored = await responses().getResponse({ responseId: id }, as(KEY_A));
    const output = stored.response?.output as Array<{ content: Array<{ text: string }> }>;
    expect(output[0]?.content[0]?.text).toBe(textOf([...first, ...rest]));
  });
});

describe("a key past responses.maxStoredPerKey", () => {
  let full: Harness;
  beforeAll(async () => {
    full = await startHarness({ models: { plain: "sim-1?tokens=2" }, responses: { maxStoredPerKey: 1 } });
  });
  afterAll(() => full.close());

  it("a stream gets its whole answer, then FAILED_PRECONDITION saying it was not kept; Chat fails", async () => {
    const client = chatClient(createGrpcTransport({ baseUrl: full.url }));
    const received: StreamChatResponse[] = [];
    const refused = await rpcFailure(
      (async () => {
        for await (const m of client.streamChat(userRequest("plain", "hi", { store: true }))) received.push(m);
      })(),
    );
    expect(received.at(-1)?.delta.case).toBe("finish");
    expect([refused.code, refused.rawMessage]).toEqual([Code.FailedPrecondition, expect.stringContaining("responses.maxStoredPerKey")]);
    expect((await rpcFailure(client.chat(unary(userRequest("plain", "hi", { store: true }))))).code).toBe(Code.FailedPrecondition);
    // Without store the same key is served as before.
    expect((await client.chat(unary(userRequest("plain", "hi")))).text).not.toBe("");
  });
});

describe("a gateway that keeps no responses (responses.store: false)", () => {
  let off: Harness;
  beforeAll(async () => {
    off = await startHarness({ models: { plain: "sim-1?tokens=2" }, responses: { store: false } });
  });
  afterAll(() => off.close());

  it("refuses store and previous_response_id by name, and serves no ResponsesService", async () => {
    const client = chatClient(createGrpcTransport({ baseUrl: off.url }));
    const refused = await rpcFailure(collect(client.streamChat(userRequest("plain", "hi", { store: true }))));
    expect([refused.code, refused.rawMessage]).toEqual([Code.FailedPrecondition, "store: this gateway keeps no responses (responses.store is false)"]);
    const previous = await rpcFailure(client.chat(unary(userRequest("plain", "hi", { previousResponseId: `resp_${"0".repeat(32)}` }))));
    expect(previous.code).toBe(Code.FailedPrecondition);
    expect(textOf(await collect(client.streamChat(userRequest("plain", "hi", { store: false }))))).not.toBe("");
    const service = createClient(ResponsesService, createGrpcTransport({ baseUrl: off.url }));
    expect((await rpcFailure(service.getResponse({ responseId: `resp_${"0".repeat(32)}` }))).code).toBe(Code.Unimplemented);
  });
});
