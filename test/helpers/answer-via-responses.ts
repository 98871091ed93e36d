import OpenAI from "openai";
import type { FunctionTool, ResponseStreamEvent, Response as SdkResponse } from "openai/resources/responses/responses";
import type { Answer } from "./answers.js";

/** The tool `answerViaGrpc` declares (answers.ts keeps its own), as a Responses function tool, so both edges ask the same question. */
export const WEATHER_TOOL: FunctionTool = {
  type: "function",
  name: "get_weather",
  description: "Weather for a city",
  parameters: { type: "object", properties: { city: { type: "string" } } },
  strict: null,
};

/** The official SDK pointed at a gateway; no retries, so every request the test makes is exactly one request. */
export function responsesClient(baseUrl: string, options: { apiKey?: string; fetch?: typeof fetch } = {}): OpenAI {
  return new OpenAI({ baseURL: `${baseUrl}/v1`, apiKey: options.apiKey ?? "not-used", maxRetries: 0, ...(options.fetch ? { fetch: options.fetch } : {}) });
}

/**
 * The Responses API has no finish reason: a client reads it from the
 * status, the incomplete reason and whether the output calls functions.
 * Named as the gRPC edge names them (answers.ts lower-cases FinishReason).
 */
function finishOf(response: SdkResponse): string {
  if (response.status === "incomplete") return response.incomplete_details?.reason === "max_output_tokens" ? "length" : "content_filter";
  if (response.status !== "completed") return String(response.status);
  return response.output.some((item) => item.type === "function_call") ? "tool_calls" : "stop";
}

function usageOf(response: SdkResponse): Answer["usage"] {
  const u = response.usage;
  if (!u) return undefined;
  return { input: u.input_tokens, output: u.output_tokens, cached: u.input_tokens_details.cached_tokens, reasoning: u.output_tokens_details.reasoning_tokens };
}

/** A whole `response` object as the edge-independent `Answer` (reasoning is the items' summaries, joined as the gRPC deltas are). */
export function answerOfResponse(response: SdkResponse): Answer {
  const answer: Answer = { text: "", reasoning: "", toolCalls: [], finish: finishOf(response) };
  for (const item of response.output) {
    if (item.type === "message") answer.text += item.content.map((c) => (c.type === "output_text" ? c.text : "")).join("");
    else if (item.type === "reasoning") answer.reasoning += item.summary.map((s) => s.text).join("");
    else if (item.type === "function_call") answer.toolCalls.push({ id: item.call_id, name: item.name, arguments: JSON.parse(item.arguments) as unknown });
  }
  const usage = usageOf(response);
  if (usage) answer.usage = usage;
  return answer;
}

/** What one streamed request said: the answer joined from its deltas, the terminal event's response, and every event type in order. */
export interface StreamedAnswer {
  readonly fromDeltas: Answer;
  readonly terminal?: SdkResponse;
  readonly types: readonly string[];
}

/**
 * Joins a Responses event stream the way a client that renders as it goes
 * would: text and reasoning from their deltas, calls from their added items
 * and argument deltas; finish and usage only the terminal event can say.
 */
export async function joinEvents(events: AsyncIterable<ResponseStreamEvent>): Promise<StreamedAnswer> {
  const answer: Answer = { text: "", reasoning: "", toolCalls: [], finish: "" };
  const calls = new Map<number, { id: string; name: string; arguments: string }>();
  const types: string[] = [];
  let terminal: SdkResponse | undefined;
  for await (const event of events) {
    types.push(event.type);
    switch (event.type) {
      case "response.output_text.delta":
        answer.text += event.delta;
        break;
      case "response.reasoning_summary_text.delta":
        answer.reasoning += event.delta;
        break;
      case "response.output_item.added":
        if (event.item.type === "function_call") calls.set(event.output_index, { id: event.item.call_id, name: event.item.name, arguments: event.item.arguments });
        break;
      case "response.function_call_arguments.delta": {
        const call = calls.get(event.output_index);
        if (call) call.arguments += event.delta;
        break;
      }
      case "response.completed":
      case "response.incomplete":
      case "response.failed":
        terminal = event.response;
        break;
    }
  }
  answer.toolCalls = [...calls.entries()].sort(([a], [b]) => a - b).map(([, c]) => ({ ...c, arguments: JSON.parse(c.arguments) as unknown }));
  if (terminal) {
    answer.finish = finishOf(terminal);
    const usage = usageOf(terminal);
    if (usage) answer.usage = usage;
  }
  return { fromDeltas: answer, ...(terminal ? { terminal } : {}), types };
}

/** The request every helper here sends: one user turn, the gRPC helper's tool. */
function params(model: string, prompt: string) {
  return { model, input: prompt, tools: [WEATHER_TOOL] };
}

/** `responses.create({stream: true})`, iterated. */
export async function answerViaResponsesEvents(client: OpenAI, model: string, prompt: string): Promise<StreamedAnswer> {
  return joinEvents(await client.responses.create({ ...params(model, prompt), stream: true }));
}

/** `responses.stream()` and the SDK's own accumulation, `finalResponse()`. */
export async function answerViaResponsesStream(client: OpenAI, model: string, prompt: string): Promise<Answer> {
  return answerOfResponse(await client.responses.stream(params(model, prompt)).finalResponse());
}

/** `responses.create()` without streaming; `outputText` is the SDK's computed `output_text`. */
export async function answerViaResponses(client: OpenAI, model: string, prompt: string): Promise<{ answer: Answer; outputText: string }> {
  const response = await client.responses.create(params(model, prompt));
  return { answer: answerOfResponse(response), outputText: response.output_text };
}

/** What a request that must fail threw; a request that succeeded fails the test. */
export async function rejection(promise: Promise<unknown>): Promise<unknown> {
  return promise.then(
    () => {
      throw new Error("expected the request to be refused");
    },
    (e: unknown) => e,
  );
}
