import { create } from "@bufbuild/protobuf";
import { Code, ConnectError } from "@connectrpc/connect";
import OpenAI from "openai";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type ContentPart, type Message, MessageSchema, Role, type ToolCall } from "../gen/sluice/v1/chat_pb.js";
import { type StreamChatRequest, StreamChatRequestSchema, type StreamChatResponse } from "../gen/sluice/v1/chat_service_pb.js";
import { FinishReason } from "../gen/sluice/v1/delta_pb.js";
import { chatClient, collect, transports, unary } from "./helpers/clients.js";
import { type Harness, type ProviderKind, startHarness } from "./helpers/harness.js";

/**
 * Multi-turn tool use with thinking, through Sluice, against a simulator
 * that signs what it issues and refuses a continuation whose signatures are
 * missing or altered (as Anthropic and Gemini 3 do).
 */
const PROMPT = "#sim reasoning=4 tokens=2 tools=2 seed=31 redacted=1";
const TOOL = { name: "lookup", description: "Look up", parameters: { type: "object", properties: { city: { type: "string" } } } };
const KINDS: ProviderKind[] = ["anthropic", "gemini"];

const harnesses = new Map<ProviderKind, Harness>();
beforeAll(async () => {
  for (const kind of KINDS) harnesses.set(kind, await startHarness({ kind, models: { sim: "sim-1" } }));
});
afterAll(async () => {
  for (const h of harnesses.values()) await h.close();
});

const text = (value: string): ContentPart => ({ $typeName: "sluice.v1.ContentPart", part: { case: "text", value } });
const user = (value: string) => create(MessageSchema, { role: Role.USER, content: [text(value)] });

function request(messages: Message[]): StreamChatRequest {
  return create(StreamChatRequestSchema, { model: "sim", messages, tools: [TOOL], reasoning: { budgetTokens: 2048 } });
}

/** The assistant turn as a client replays it: reasoning parts (signed), text, and tool calls with their signatures. */
function assistantFrom(stream: readonly StreamChatResponse[]): Message {
  const content: ContentPart[] = [];
  let answer = "";
  let open: { text: string } | undefined;
  const calls: ToolCall[] = [];
  const reasoningPart = (t: string, signature = "", redactedData = ""): ContentPart => ({
    $typeName: "sluice.v1.ContentPart",
    part: { case: "reasoning", value: { $typeName: "sluice.v1.ReasoningPart", text: t, signature, redactedData } },
  });
  // Unsigned reasoning ends where other content starts, as the gateway's own aggregation does.
  const interrupt = () => {
    if (open && open.text !== "") content.push(reasoningPart(open.text));
    open = undefined;
  };
  for (const { delta } of stream) {
    if (delta.case === "text" || delta.case === "toolCall") interrupt();
    if (delta.case === "reasoning") {
      const r = delta.value;
      if (r.redactedData) {
        interrupt();
        content.push(reasoningPart("", "", r.redactedData));
      } else {
        open ??= { text: "" };
        open.text += r.text;
        if (r.signature) {
          content.push(reasoningPart(open.text, r.signature));
          open = undefined;
        }
      }
    } else if (delta.case === "text") answer += delta.value.text;
    else if (delta.case === "toolCall") {
      const d = delta.value;
      const call = (calls[d.index] ??= { $typeName: "sluice.v1.ToolCall", id: "", name: "", arguments: "", signature: "" });
      if (d.id) call.id = d.id;
      if (d.name) call.name = d.name;
      if (d.signature) call.signature = d.signature;
      call.arguments += d.arguments;
    }
  }
  interrupt();
  if (answer) content.push(text(answer));
  return create(MessageSchema, { role: Role.ASSISTANT, content, toolCalls: calls });
}

function toolResults(assistant: Message): Message[] {
  return assistant.toolCalls.map((c) => create(MessageSchema, { role: Role.TOOL, toolCallId: c.id, content: [text('{"temp":21}')] }));
}

async function failure(promise: Promise<unknown>): Promise<ConnectError> {
  return promise.then(
    () => {
      throw new Error("expected the call to fail");
    },
    (e: unknown) => ConnectError.from(e),
  );
}

describe.each(KINDS)("%s: signatures through the gRPC edge", (kind) => {
  it("a second tool turn that replays the signed turn succeeds; the same turn without signatures is refused upstream", async () => {
    const client = chatClient(transports(harnesses.get(kind)!.url)["grpc (connect-node, h2)"]!);
    const first = await collect(client.streamChat(request([user(PROMPT)])));
    expect(first.at(-1)!.delta).toMatchObject({ case: "finish", value: { reason: FinishReason.TOOL_CALLS } });
    const assistant = assistantFrom(first);
    if (kind === "anthropic") {
      expect(assistant.content.filter((p) => p.part.case === "reasoning").map((p) => (p.part.value as { redactedData: string }).redactedData !== "")).toEqual([true, false]);
    } else {
      expect(assistant.toolCalls[0]!.signature).not.toBe("");
    }

    const second = await collect(client.streamChat(request([user(PROMPT), assistant, ...toolResults(assistant)])));
    expect(second.at(-1)!.delta.case).toBe("finish");

    const stripped = create(MessageSchema, {
      role: Role.ASSISTANT,
      content: assistant.content.filter((p) => p.part.case !== "reasoning"),
      toolCalls: assistant.toolCalls.map((c) => ({ ...c, signature: "" })),
    });
    const error = await failure(collect(client.streamChat(request([user(PROMPT), stripped, ...toolResults(stripped)]))));
    expect(error.code).toBe(Code.InvalidArgument);
    expect(error.rawMessage).toMatch(kind === "anthropic" ? /Expected `thinking` or `redacted_thinking`/ : /missing a thought_signature/);
  });

  it("a tampered signature is refused: the simulator verifies what it issued", async () => {
    const client = chatClient(transports(harnesses.get(kind)!.url)["grpc (connect-node, h2)"]!);
    const assistant = assistantFrom(await collect(client.streamChat(request([user(PROMPT)]))));
    const tampered = create(MessageSchema, {
      ...assistant,
      content: assistant.content.map((p) => (p.part.case === "reasoning" && p.part.value.signature ? { ...p, part: { case: "reasoning" as const, value: { ...p.part.value, text: `${p.part.value.text}!` } } } : p)),
      toolCalls: assistant.toolCalls.map((c, i) => (i === 0 ? { ...c, arguments: '{"city":"Nowhere","days":1}' } : c)),
    });
    const error = await failure(collect(client.streamChat(request([user(PROMPT), tampered, ...toolResults(tampered)]))));
    expect(error.code).toBe(Code.InvalidArgument);
    expect(error.rawMessage).toMatch(/Invalid .*signature/);
  });

  it("Chat returns the same signed parts, ready to replay", async () => {
    const client = chatClient(transports(harnesses.get(kind)!.url)["grpc (connect-node, h2)"]!);
    const streamed = assistantFrom(await collect(client.streamChat(request([user(PROMPT)]))));
    const whole = await client.chat(unary(request([user(PROMPT)])));
    const parts = streamed.content.filter((p) => p.part.case === "reasoning").map((p) => p.part.value);
    expect(whole.reasoningParts.map(({ text: t, signature, redactedData }) => ({ text: t, signature, redactedData }))).toEqual(
      parts.map((p) => {
        const { text: t, signature, redactedData } = p as { text: string; signature: string; redactedData: string };
        return { text: t, signature, redactedData };
      }),
    );
    expect(whole.toolCalls.map((c) => c.signature)).toEqual(streamed.toolCalls.map((c) => c.signature));
  });
});

describe.each(KINDS)("%s: signatures kept by the OpenAI facade", (kind) => {
  const tools: OpenAI.ChatCompletionTool[] = [{ type: "function", function: TOOL }];

  async function turn(openai: OpenAI, messages: OpenAI.ChatCompletionMessageParam[], stream: boolean): Promise<OpenAI.ChatCompletionMessage> {
    const params = { model: "sim", messages, tools, reasoning_effort: "high" as const };
    if (!stream) return (await openai.chat.completions.create(params)).choices[0]!.message;
    return (await openai.chat.completions.stream(params).finalChatCompletion()).choices[0]!.message;
  }

  for (const stream of [true, false]) {
    it(`standard tool_calls / tool messages are enough for the next turn (${stream ? "streaming" : "non-streaming"})`, async () => {
      const openai = new OpenAI({ baseURL: `${harnesses.get(kind)!.url}/v1`, apiKey: "unused", maxRetries: 0 });
      const messages: OpenAI.ChatCompletionMessageParam[] = [{ role: "user", content: PROMPT }];
      const assistant = await turn(openai, messages, stream);
      expect(assistant.tool_calls).toHaveLength(2);
      const results = assistant.tool_calls!.map((c) => ({ role: "tool" as const, tool_call_id: c.id, content: '{"temp":21}' }));
      const history: OpenAI.ChatCompletionMessageParam[] = [...messages, { role: "assistant", content: assistant.content, tool_calls: assistant.tool_calls! }, ...results];
      const next = await turn(openai, history, stream);
      // Accepted, and answered as a model in a tool loop does: with the results, quoted.
      expect(next.tool_calls ?? []).toHaveLength(0);
      expect(next.content?.split("\n")).toEqual(results.map(() => `${assistant.tool_calls![0]!.type === "function" ? assistant.tool_calls![0]!.function.name : ""} returned: {"temp":21}`));

      // The same history with call ids the gateway never handed out: nothing to restore, and the provider refuses.
      const foreign = history.map((m) => (m.role === "assistant" ? { ...m, tool_calls: m.tool_calls!.map((c) => ({ ...c, id: `x${c.id}` })) } : m.role === "tool" ? { ...m, tool_call_id: `x${m.tool_call_id}` } : m));
      const error = await turn(openai, foreign, stream).then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(error).toBeInstanceOf(OpenAI.BadRequestError);
    });
  }
});

describe("gemini: a signature on answer text", () => {
  it("travels as a bare reasoning signature and goes back on the text it signs", async () => {
    const client = chatClient(transports(harnesses.get("gemini")!.url)["grpc (connect-node, h2)"]!);
    const prompt = "#sim reasoning=3 tokens=4 seed=32";
    const first = await collect(client.streamChat(request([user(prompt)])));
    const bare = first.filter((m) => m.delta.case === "reasoning" && m.delta.value.text === "" && m.delta.value.signature !== "");
    expect(bare).toHaveLength(1);
    const assistant = assistantFrom(first);
    const again = [user(prompt), assistant, user("and then?")];
    expect((await collect(client.streamChat(request(again)))).at(-1)!.delta.case).toBe("finish");

    const altered = create(MessageSchema, {
      role: Role.ASSISTANT,
      content: assistant.content.map((p) => (p.part.case === "text" ? text(`${p.part.value} (edited)`) : p)),
    });
    const error = await failure(collect(client.streamChat(request([user(prompt), altered, user("and then?")]))));
    expect(error.rawMessage).toMatch(/Invalid thought signature/);
  });
});
