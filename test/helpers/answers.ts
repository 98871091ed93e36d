import OpenAI from "openai";
import { FinishReason } from "../../gen/sluice/v1/delta_pb.js";
import { chatClient, transports, userRequest } from "./clients.js";

/** An answer as a client assembles it, edge-independent, for comparisons. */
export interface Answer {
  text: string;
  reasoning: string;
  toolCalls: Array<{ id: string; name: string; arguments: unknown }>;
  finish: string;
  usage?: { input: number; output: number; cached: number; reasoning: number };
}

const TOOL = { name: "get_weather", description: "Weather for a city", parameters: { type: "object", properties: { city: { type: "string" } } } };

function addToolFragment(calls: Answer["toolCalls"], index: number, id: string | undefined, name: string | undefined, args: string): void {
  const call = (calls[index] ??= { id: "", name: "", arguments: "" });
  if (id) call.id = id;
  if (name) call.name = name;
  call.arguments = (call.arguments as string) + args;
}

function parseArguments(answer: Answer): Answer {
  answer.toolCalls = answer.toolCalls.map((c) => ({ ...c, arguments: JSON.parse(c.arguments as string) as unknown }));
  return answer;
}

/** Streams through the gRPC edge (connect-node, HTTP/2). */
export async function answerViaGrpc(baseUrl: string, model: string, prompt: string): Promise<Answer> {
  const client = chatClient(transports(baseUrl)["grpc (connect-node, h2)"]!);
  const answer: Answer = { text: "", reasoning: "", toolCalls: [], finish: "" };
  const request = userRequest(model, prompt, { tools: [TOOL] });
  for await (const m of client.streamChat(request)) {
    const d = m.delta;
    if (d.case === "text") answer.text += d.value.text;
    else if (d.case === "reasoning") answer.reasoning += d.value.text;
    else if (d.case === "toolCall") addToolFragment(answer.toolCalls, d.value.index, d.value.id, d.value.name, d.value.arguments);
    else if (d.case === "usage") {
      answer.usage = {
        input: Number(d.value.inputTokens),
        output: Number(d.value.outputTokens),
        cached: Number(d.value.cachedInputTokens),
        reasoning: Number(d.value.reasoningTokens),
      };
    } else if (d.case === "finish") answer.finish = FinishReason[d.value.reason].toLowerCase();
  }
  return parseArguments(answer);
}

/** Streams through the OpenAI facade with the official SDK. */
export async function answerViaFacade(baseUrl: string, model: string, prompt: string): Promise<Answer> {
  const openai = new OpenAI({ baseURL: `${baseUrl}/v1`, apiKey: "not-used", maxRetries: 0 });
  const answer: Answer = { text: "", reasoning: "", toolCalls: [], finish: "" };
  const stream = await openai.chat.completions.create({
    model,
    messages: [{ role: "user", content: prompt }],
    tools: [{ type: "function", function: TOOL }],
    stream: true,
    stream_options: { include_usage: true },
  });
  for await (const chunk of stream) {
    const choice = chunk.choices[0];
    const delta = choice?.delta as (OpenAI.ChatCompletionChunk.Choice.Delta & { reasoning_content?: string }) | undefined;
    if (delta?.content) answer.text += delta.content;
    if (delta?.reasoning_content) answer.reasoning += delta.reasoning_content;
    for (const call of delta?.tool_calls ?? []) addToolFragment(answer.toolCalls, call.index, call.id, call.function?.name, call.function?.arguments ?? "");
    if (choice?.finish_reason) answer.finish = choice.finish_reason;
    if (chunk.usage) {
      answer.usage = {
        input: chunk.usage.prompt_tokens,
        output: chunk.usage.completion_tokens,
        cached: chunk.usage.prompt_tokens_details?.cached_tokens ?? 0,
        reasoning: chunk.usage.completion_tokens_details?.reasoning_tokens ?? 0,
      };
    }
  }
  return parseArguments(answer);
}
