import { create } from "@bufbuild/protobuf";
import { Code, ConnectError } from "@connectrpc/connect";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ImageDetail, Role, SamplingSchema, ToolChoiceSchema } from "../gen/sluice/v1/chat_pb.js";
import { type StreamChatRequest, StreamChatRequestSchema } from "../gen/sluice/v1/chat_service_pb.js";
import { type ChatClient, chatClient, collect, transports, unary, userRequest } from "./helpers/clients.js";
import { type Harness, startHarness } from "./helpers/harness.js";

let h: Harness;
let client: ChatClient;
beforeAll(async () => {
  h = await startHarness({ models: { sim: "sim-1?tokens=2" } });
  client = chatClient(transports(h.url)["grpc (connect-node, h2)"]!);
});
afterAll(() => h.close());

async function errorOf(request: StreamChatRequest): Promise<ConnectError> {
  try {
    await collect(client.streamChat(request));
  } catch (e) {
    return ConnectError.from(e);
  }
  throw new Error("expected the call to fail");
}

const text = (value: string) => ({ part: { case: "text" as const, value } });

describe("bad requests", () => {
  it("unknown model → NOT_FOUND naming the model, nothing sent upstream", async () => {
    const before = h.sim.records.all().length;
    const error = await errorOf(userRequest("gpt-nonexistent", "hi"));
    expect(error.code).toBe(Code.NotFound);
    expect(error.rawMessage).toContain('"gpt-nonexistent"');
    expect(h.sim.records.all().length).toBe(before);
  });

  const cases: Array<[string, StreamChatRequest, string]> = [
    ["empty messages", create(StreamChatRequestSchema, { model: "sim" }), "messages: must contain at least one message"],
    ["empty model", userRequest("", "hi"), "model: must name a model alias"],
    ["role not set", create(StreamChatRequestSchema, { model: "sim", messages: [{ content: [text("hi")] }] }), "messages[0].role: must be set to SYSTEM, USER, ASSISTANT or TOOL"],
    ["empty content", create(StreamChatRequestSchema, { model: "sim", messages: [{ role: Role.USER }] }), "messages[0].content: must not be empty"],
    ["content part with nothing set", create(StreamChatRequestSchema, { model: "sim", messages: [{ role: Role.USER, content: [{}] }] }), "messages[0].content[0]: content part must set text, image_url or reasoning"],
    ["tool message without call id", create(StreamChatRequestSchema, { model: "sim", messages: [{ role: Role.TOOL, content: [text("42")] }] }), "messages[0].tool_call_id: is required for tool messages"],
    [
      "image with a file: URL",
      create(StreamChatRequestSchema, {
        model: "sim",
        messages: [{ role: Role.USER, content: [{ part: { case: "imageUrl", value: { url: "file:///etc/passwd", detail: ImageDetail.LOW } } }] }],
      }),
      "messages[0].content[0].image_url.url: must be an http(s) or data: URL",
    ],
    ["temperature out of range", userRequest("sim", "hi", { sampling: create(SamplingSchema, { temperature: 3 }) }), "sampling.temperature: must be between 0 and 2"],
    ["top_p zero", userRequest("sim", "hi", { sampling: create(SamplingSchema, { topP: 0 }) }), "sampling.top_p: must be greater than 0 and at most 1"],
    ["max_tokens zero", userRequest("sim", "hi", { sampling: create(SamplingSchema, { maxTokens: 0 }) }), "sampling.max_tokens: must be at least 1"],
    ["five stop sequences", userRequest("sim", "hi", { sampling: create(SamplingSchema, { stop: ["a", "b", "c", "d", "e"] }) }), "sampling.stop: at most 4 stop sequences"],
    ["bad tool name", userRequest("sim", "hi", { tools: [{ $typeName: "sluice.v1.Tool", name: "has space", description: "" }] }), "tools[0].name: must be 1-64 letters, digits, '_' or '-'"],
    [
      "duplicate tool names",
      userRequest("sim", "hi", {
        tools: [
          { $typeName: "sluice.v1.Tool", name: "a", description: "" },
          { $typeName: "sluice.v1.Tool", name: "a", description: "" },
        ],
      }),
      'tools[1].name: duplicate tool name "a"',
    ],
    ["tool choice naming a missing tool", userRequest("sim", "hi", { toolChoice: create(ToolChoiceSchema, { choice: { case: "functionName", value: "ghost" } }) }), 'tool_choice.function_name: no tool named "ghost" in tools'],
  ];
  for (const [name, request, message] of cases) {
    it(`${name} → INVALID_ARGUMENT`, async () => {
      const error = await errorOf(request);
      expect(error.code).toBe(Code.InvalidArgument);
      expect(error.rawMessage).toBe(message);
    });
  }

  it("the same errors reach a unary Chat call", async () => {
    await expect(client.chat(unary(create(StreamChatRequestSchema, { model: "sim" })))).rejects.toMatchObject({ code: Code.InvalidArgument });
  });

  it("a Connect JSON body with a wrongly typed field → INVALID_ARGUMENT naming the field", async () => {
    const res = await fetch(`${h.url}/sluice.v1.ChatService/Chat`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ model: 5 }),
    });
    expect(res.status).toBe(400);
    const body = (await res.json()) as { code: string; message: string };
    expect(body.code).toBe("invalid_argument");
    expect(body.message).toContain("sluice.v1.ChatRequest.model");
  });

  it("an accepted request with every field set reaches the provider", async () => {
    const request = create(StreamChatRequestSchema, {
      model: "sim",
      messages: [
        { role: Role.SYSTEM, content: [text("be brief\n#sim tag=full")] },
        { role: Role.USER, content: [text("look"), { part: { case: "imageUrl", value: { url: "https://example.test/a.png" } } }] },
        { role: Role.ASSISTANT, toolCalls: [{ id: "c1", name: "lookup", arguments: "{}" }] },
        { role: Role.TOOL, toolCallId: "c1", content: [text('{"ok":true}')] },
      ],
      tools: [{ name: "lookup", description: "d", parameters: { type: "object", properties: {} } }],
      sampling: { temperature: 0.5, topP: 0.9, maxTokens: 100, stop: ["END"], seed: 7n },
      metadata: { userId: "u1", sessionId: "s1", labels: { team: "x" } },
    });
    const messages = await collect(client.streamChat(request));
    expect(messages.at(-1)!.delta.case).toBe("finish");
    expect((await h.sim.records.waitFor((r) => r.tag === "full", 30_000)).outcome).toBe("completed");
  });
});
