import { maxTokensOf, responsesLoopInput } from "./loop-input.js";
import type { Script, ScriptStep } from "./script.js";
import type { Frame, SimRequest, WireFormat } from "./wire.js";

interface ResponsesBody {
  model?: unknown;
  tool_choice?: unknown;
  stream?: unknown;
  instructions?: unknown;
  input?: unknown;
  tools?: unknown;
  text?: { format?: { type?: unknown; schema?: unknown } };
}

interface WireTool {
  type?: unknown;
  name?: unknown;
  tools?: unknown;
}

/** How the simulated model calls each tool name back: freeform (custom) or under a namespace. */
interface CallForm {
  readonly custom: boolean;
  readonly namespace?: string;
  readonly member?: string;
}

/** The request as this wire needs it beyond the shared fields: which names are custom tools or namespace members. */
interface ResponsesSimRequest extends SimRequest {
  readonly forms: ReadonlyMap<string, CallForm>;
}

function textsOf(body: ResponsesBody): string[] {
  const texts: string[] = typeof body.instructions === "string" ? [body.instructions] : [];
  if (typeof body.input === "string") return [...texts, body.input];
  if (!Array.isArray(body.input)) throw new Error("input: must be a string or an array of items");
  for (const item of body.input as Array<{ content?: unknown; output?: unknown }>) {
    const content = item.content ?? item.output;
    if (typeof content === "string") texts.push(content);
    else if (Array.isArray(content)) {
      for (const part of content as Array<{ text?: unknown }>) if (typeof part.text === "string") texts.push(part.text);
    }
  }
  return texts;
}

/** Callable names (function and custom tools, namespace members flat as `ns__member`), hosted tools left out: the provider runs those. */
function toolsOf(body: ResponsesBody): { names: string[]; forms: Map<string, CallForm> } {
  const names: string[] = [];
  const forms = new Map<string, CallForm>();
  const add = (t: WireTool, namespace?: string) => {
    if (typeof t.name !== "string" || (t.type !== "function" && t.type !== "custom")) return;
    const name = namespace === undefined ? t.name : `${namespace}__${t.name}`;
    names.push(name);
    forms.set(name, { custom: t.type === "custom", ...(namespace === undefined ? {} : { namespace, member: t.name }) });
  };
  for (const t of Array.isArray(body.tools) ? (body.tools as WireTool[]) : []) {
    if (t.type === "namespace" && typeof t.name === "string" && Array.isArray(t.tools)) for (const m of t.tools as WireTool[]) add(m, t.name);
    else add(t);
  }
  return { names, forms };
}

function usage(script: Script): Record<string, unknown> {
  return {
    input_tokens: script.inputTokens,
    input_tokens_details: { cached_tokens: 0 },
    output_tokens: script.outputTokens,
    output_tokens_details: { reasoning_tokens: script.reasoningTokens },
    total_tokens: script.inputTokens + script.outputTokens,
  };
}

/** The output items a script makes, whole, in order: what `response.completed` and a non-streamed response carry. */
function outputItems(script: Script, request: ResponsesSimRequest, id: string): Array<Record<string, unknown>> {
  const items: Array<Record<string, unknown>> = [];
  const byCall = new Map<number, Record<string, unknown>>();
  for (const step of script.steps) {
    const last = items.at(-1);
    if (step.type === "reasoning") {
      if (last?.type === "reasoning") (last.summary as Array<{ text: string }>)[0]!.text += step.text;
      else items.push({ type: "reasoning", id: `rs_${id}_${items.length}`, summary: [{ type: "summary_text", text: step.text }], encrypted_content: `enc_${id}_${items.length}` });
    } else if (step.type === "text") {
      if (last?.type === "message") (last.content as Array<{ text: string }>)[0]!.text += step.text;
      else items.push({ type: "message", id: `msg_${id}_${items.length}`, role: "assistant", status: "completed", content: [{ type: "output_text", text: step.text, annotations: [] }] });
    } else if (step.type === "tool_call") {
      const form = request.forms.get(step.name);
      const name = form?.member ?? step.name;
      const ns = form?.namespace === undefined ? {} : { namespace: form.namespace };
      const item = form?.custom
        ? { type: "custom_tool_call", id: `ctc_${id}_${items.length}`, call_id: step.id, name, ...ns, input: step.arguments }
        : { type: "function_call", id: `fc_${id}_${items.length}`, call_id: step.id, name, ...ns, arguments: step.arguments, status: "completed" };
      items.push(item);
      byCall.set(step.index, item);
    } else {
      const item = byCall.get(step.index)!;
      if (item.type === "custom_tool_call") item.input = `${item.input as string}${step.fragment}`;
      else item.arguments = `${item.arguments as string}${step.fragment}`;
    }
  }
  return items;
}

function response(id: string, model: string, status: string, output: unknown[], extra: Record<string, unknown> = {}): Record<string, unknown> {
  return { id: `resp_${id}`, object: "response", created_at: 1_700_000_000, status, model, output, ...extra };
}

/**
 * OpenAI Responses (`POST /v1/responses`): the same scripts as the other
 * wires, as typed events — each output item added, its deltas, its `.done`
 * events when the next item opens — and `response.completed` with the whole
 * output and usage. Reasoning items carry an `encrypted_content`, as OpenAI's
 * do with `include: ["reasoning.encrypted_content"]`.
 */
export const responsesWire: WireFormat = {
  name: "responses",
  parseRequest(raw) {
    const body = raw as ResponsesBody;
    if (typeof body.model !== "string") throw new Error("model: must be a string");
    const { forms } = toolsOf(body);
    const format = body.text?.format;
    return {
      model: body.model,
      stream: body.stream === true,
      texts: textsOf(body),
      ...responsesLoopInput(body),
      ...maxTokensOf((body as { max_output_tokens?: unknown }).max_output_tokens),
      includeUsage: true,
      forms,
      ...(format?.type === "json_schema" ? { json: { schema: (format.schema ?? {}) as Record<string, unknown> } } : {}),
      ...(format?.type === "json_object" ? { json: {} } : {}),
    } satisfies ResponsesSimRequest;
  },
  streamFrames(script, simRequest, _knobs, id) {
    const request = simRequest as ResponsesSimRequest;
    const items = outputItems(script, request, id);
    const frames: Frame[] = [];
    let sequence = 0;
    const push = (type: string, fields: Record<string, unknown>, token = false) => frames.push({ event: type, data: JSON.stringify({ type, sequence_number: sequence++, ...fields }), token });
    push("response.created", { response: response(id, request.model, "in_progress", []) });
    // Which item each step belongs to: items are built in step order, a new item starting when the kind changes.
    let open = -1;
    let kind: ScriptStep["type"] | undefined;
    const callItems = new Map<number, number>();
    const close = () => {
      if (open < 0) return;
      const item = items[open]!;
      const at = { item_id: item.id, output_index: open };
      if (item.type === "message") {
        const text = (item.content as Array<{ text: string }>)[0]!.text;
        push("response.output_text.done", { ...at, content_index: 0, text });
        push("response.content_part.done", { ...at, content_index: 0, part: { type: "output_text", text, annotations: [] } });
      } else if (item.type === "custom_tool_call") push("response.custom_tool_call_input.done", { ...at, input: item.input });
      else if (item.type === "function_call") push("response.function_call_arguments.done", { ...at, arguments: item.arguments });
      push("response.output_item.done", { output_index: open, item });
    };
    const openItem = (index: number) => {
      close();
      open = index;
      const item = items[index]!;
      const empty =
        item.type === "message"
          ? { ...item, status: "in_progress", content: [] }
          : item.type === "reasoning"
            ? { ...item, summary: [], encrypted_content: undefined }
            : item.type === "custom_tool_call"
              ? { ...item, input: "" }
              : { ...item, arguments: "", status: "in_progress" };
      push("response.output_item.added", { output_index: index, item: empty });
      if (item.type === "message") push("response.content_part.added", { item_id: item.id, output_index: index, content_index: 0, part: { type: "output_text", text: "", annotations: [] } });
    };
    let next = 0;
    for (const step of script.steps) {
      if (step.type === "tool_call" || (step.type !== "tool_args" && step.type !== kind)) {
        openItem(next);
        if (step.type === "tool_call") callItems.set(step.index, next);
        next++;
      }
      if (step.type !== "tool_args") kind = step.type;
      const index = step.type === "tool_args" || step.type === "tool_call" ? callItems.get(step.index)! : open;
      const item = items[index]!;
      const at = { item_id: item.id, output_index: index };
      const piece = step.type === "tool_args" ? step.fragment : step.type === "tool_call" ? step.arguments : step.text;
      if (step.type === "reasoning") push("response.reasoning_summary_text.delta", { ...at, summary_index: 0, delta: piece }, true);
      else if (step.type === "text") push("response.output_text.delta", { ...at, content_index: 0, delta: piece, logprobs: [] }, true);
      else if (item.type === "custom_tool_call") push("response.custom_tool_call_input.delta", { ...at, delta: piece }, true);
      else push("response.function_call_arguments.delta", { ...at, delta: piece }, true);
    }
    close();
    push("response.completed", { response: response(id, request.model, "completed", items, { usage: usage(script) }) });
    return frames;
  },
  completeBody(script, request, id) {
    return response(id, request.model, "completed", outputItems(script, request as ResponsesSimRequest, id), { usage: usage(script) });
  },
  errorBody(status, message) {
    const type = status === 429 ? "rate_limit_exceeded" : status >= 500 ? "server_error" : "invalid_request_error";
    return { error: { message, type, param: null, code: null } };
  },
  inBandError(message, kind) {
    const code = kind === "rate_limit" ? "rate_limit_exceeded" : kind === "quota" ? "insufficient_quota" : kind === "auth" ? "invalid_api_key" : "server_error";
    return { event: "error", data: JSON.stringify({ type: "error", code, message, param: null }), token: false };
  },
};
