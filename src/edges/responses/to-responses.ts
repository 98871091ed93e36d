import type { ChatResult } from "../../core/aggregate.js";
import type { Delta, FinishReason, GatewayToolEvent, HostedItemDelta, ReasoningDelta, ToolCallDelta, Usage } from "../../core/delta.js";
import { encodeReasoning, type ReasoningEnvelope } from "./encrypted-reasoning.js";
import { createFreeformDecoder } from "./freeform-input.js";
import { hostedOutputItem } from "./hosted-items.js";
import { addedItemOf, type CallSlot, itemOf, outputText, type Slot } from "./output-slots.js";
import type { ItemStatus, ResponseEcho, ResponseObject, ResponseStatus, ResponseUsage } from "./response-object.js";
import { responsesParam, toResponsesError } from "./responses-errors.js";

export interface ResponseEncoderOptions {
  /**
   * The model alias the client named: the response's `model`, as on every
   * HTTP edge (docs/streams.md, "The model an answer names"). The model
   * that serves it goes only into the encrypted reasoning envelope, whose
   * signatures verify with that model alone.
   */
  readonly requestModel: string;
  /** From the decoded request (`ResponsesRequest.echo`). */
  readonly echo: ResponseEcho;
  /** From the decoded request (`ResponsesRequest.param`): names a failure's field the way the request did. */
  readonly param?: (field: string) => string;
  /**
   * From the decoded request (`ResponsesRequest.calls`): which canonical
   * tool names are freeform tools or namespace members, so their calls go
   * back as `custom_tool_call` items and under their namespace.
   */
  readonly calls?: ReadonlyMap<string, DeclaredCall>;
  /** `sse` (default): each event as `event: <type>\ndata: <json>\n\n`; `json`: the JSON alone, one WebSocket message per event (responses-socket.ts). */
  readonly frames?: "sse" | "json";
  /**
   * A background run's (background-runs.ts): `store` and `background` true,
   * and its times as stored, so a replay of its events says what the
   * original said (`completedAt` once the run has ended).
   */
  readonly background?: { readonly createdAt: number; readonly completedAt?: number };
}

/** How a canonical tool name is called back on this edge. */
export interface DeclaredCall {
  readonly freeform: boolean;
  /** The member's own name and its namespace, for a tool declared in a `namespace`. */
  readonly namespace?: { readonly name: string; readonly member: string };
}

/** Receives one frame: SSE's `event: <type>\ndata: <json>\n\n`, or the JSON alone (`frames: "json"`). */
export type FramePush = (frame: string) => void;

/**
 * The edge's only delta conversion: deltas in, Responses streaming events
 * out, in the order the openai SDK's accumulator (ResponseStream) builds
 * its snapshot from. One per request: it numbers events, names items and
 * keeps every item so the terminal event carries the whole response (the
 * SDK's final response is that event's object, not its own snapshot).
 */
export interface ResponseEncoder {
  /**
   * The frames for one delta. `start` must come first (the pipeline's
   * order) and `usage` before `finish` (also the pipeline's): `finish`
   * sends the terminal event, after which deltas add nothing.
   */
  events(delta: Delta, push: FramePush): void;
  /**
   * The frames for a failure mid-stream: `response.failed` with what was
   * produced so far, then an `error` event with a top-level `error` object
   * as well as the event's own fields: the openai SDK's SSE reader raises on
   * that object, while a bare typed `error` event is handed on like any other
   * and the client would take the truncated answer as complete. Before `start` only the `error` event (the SDK needs
   * `response.created` before any other event); after the terminal event
   * nothing, the response being complete.
   */
  failedEvents(reason: unknown, push: FramePush): void;
  /** The response as the events so far describe it: after `finish`, the final one. */
  response(): ResponseObject;
}

/** A push that wants no frames: non-streaming answers skip serialising events. */
const discard: FramePush = () => undefined;

function usageOf(u: Usage): ResponseUsage {
  const written5m = u.cacheWrite5mTokens ?? 0;
  const written1h = u.cacheWrite1hTokens ?? 0;
  return {
    input_tokens: u.inputTokens,
    input_tokens_details: { cached_tokens: u.cachedInputTokens, cache_write_tokens: written5m + written1h, cache_write_5m_tokens: written5m, cache_write_1h_tokens: written1h },
    output_tokens: u.outputTokens,
    output_tokens_details: { reasoning_tokens: u.reasoningTokens },
    total_tokens: u.inputTokens + u.outputTokens,
    estimated: u.estimated ? true : undefined,
  };
}

/** How each finish reason ends a response; reasons the Responses API has no word for end it completed. */
function terminal(reason: FinishReason): { status: "completed" | "incomplete"; details: ResponseObject["incomplete_details"] } {
  switch (reason) {
    case "length":
      return { status: "incomplete", details: { reason: "max_output_tokens" } };
    case "content_filter":
      return { status: "incomplete", details: { reason: "content_filter" } };
    case "stop":
    case "tool_calls":
    case "other":
    case "unspecified":
      return { status: "completed", details: null };
  }
}

const seconds = () => Math.floor(Date.now() / 1000);

export function createResponseEncoder(options: ResponseEncoderOptions): ResponseEncoder {
  const createdAt = options.background?.createdAt ?? seconds();
  let id = "";
  const model = options.requestModel;
  let provider = "";
  let servedModel = "";
  let itemBase = "";
  let sequence = 0;
  let started = false;
  let status: ResponseStatus = "in_progress";
  let incomplete: ResponseObject["incomplete_details"] = null;
  let error: ResponseObject["error"] = null;
  let completedAt: number | null = null;
  let usage: ResponseUsage | undefined;
  const slots: Slot[] = [];
  /** The open message or reasoning item. */
  let open: Extract<Slot, { kind: "message" | "reasoning" }> | undefined;
  const calls = new Map<number, CallSlot>();
  /** The gateway's MCP calls under way, by the model's call id. */
  const mcpCalls = new Map<string, Extract<Slot, { kind: "mcp" }>>();
  let push: FramePush = discard;
  const sse = options.frames !== "json";

  const emit = (type: string, fields: Record<string, unknown>) => {
    const n = sequence++;
    if (push === discard) return;
    const json = JSON.stringify({ type, sequence_number: n, ...fields });
    push(sse ? `event: ${type}\ndata: ${json}\n\n` : json);
  };

  const response = (): ResponseObject => ({
    id,
    object: "response",
    created_at: createdAt,
    completed_at: completedAt,
    status,
    error,
    incomplete_details: incomplete,
    model,
    output: slots.map((slot) => itemOf(slot, slot.closed ?? (status === "in_progress" ? "in_progress" : "incomplete"))),
    usage,
    ...options.echo,
    store: options.background !== undefined || (options.echo.store ?? false),
    background: options.background !== undefined,
    previous_response_id: options.echo.previous_response_id ?? null,
    truncation: options.echo.truncation ?? "disabled",
  });

  const envelope = (fields: Omit<ReasoningEnvelope, "provider" | "model">) => encodeReasoning({ provider, model: servedModel, ...fields });

  const slotId = (prefix: string) => `${prefix}_${itemBase}_${slots.length}`;

  function add(slot: Slot): void {
    slots.push(slot);
    emit("response.output_item.added", { output_index: slot.index, item: addedItemOf(slot) });
  }

  function done(slot: Slot, itemStatus: ItemStatus): void {
    slot.closed = itemStatus;
    emit("response.output_item.done", { output_index: slot.index, item: itemOf(slot, itemStatus) });
  }

  function openMessage(): Extract<Slot, { kind: "message" }> {
    const index = slots.length;
    const itemId = slotId("msg");
    const slot: Extract<Slot, { kind: "message" }> = {
      kind: "message",
      index,
      id: itemId,
      text: "",
      // The text delta event after its sequence number, fixed per item: text deltas come by the thousand.
      head: `,"item_id":${JSON.stringify(itemId)},"output_index":${index},"content_index":0,"delta":`,
    };
    add(slot);
    emit("response.content_part.added", { item_id: itemId, output_index: index, content_index: 0, part: outputText("") });
    return slot;
  }

  function openReasoning(): Extract<Slot, { kind: "reasoning" }> {
    const slot: Extract<Slot, { kind: "reasoning" }> = { kind: "reasoning", index: slots.length, id: slotId("rs"), text: "", summary: false };
    add(slot);
    return slot;
  }

  function closeOpen(itemStatus: ItemStatus): void {
    const slot = open;
    if (!slot) return;
    open = undefined;
    const at = { item_id: slot.id, output_index: slot.index };
    if (slot.kind === "message") {
      emit("response.output_text.done", { ...at, content_index: 0, text: slot.text, logprobs: [] });
      emit("response.content_part.done", { ...at, content_index: 0, part: outputText(slot.text) });
    } else if (slot.summary) {
      emit("response.reasoning_summary_text.done", { ...at, summary_index: 0, text: slot.text });
      emit("response.reasoning_summary_part.done", { ...at, summary_index: 0, part: { type: "summary_text", text: slot.text } });
    }
    done(slot, itemStatus);
  }

  function closeCalls(itemStatus: ItemStatus): void {
    for (const slot of [...calls.values()].filter((s) => s.closed === undefined).sort((a, b) => a.index - b.index)) {
      if (slot.kind === "custom_tool_call") {
        const tail = slot.decoder.end();
        if (tail !== "") emit("response.custom_tool_call_input.delta", { item_id: slot.id, output_index: slot.index, delta: tail });
        emit("response.custom_tool_call_input.done", { item_id: slot.id, output_index: slot.index, input: slot.decoder.input });
      } else {
        emit("response.function_call_arguments.done", { item_id: slot.id, output_index: slot.index, name: slot.name, arguments: slot.args });
      }
      done(slot, itemStatus);
      // A call's signature has no field of its own: a reasoning item carries it, as it carries every other replay state.
      if (slot.signature !== undefined) {
        const carrier = openReasoning();
        carrier.encrypted = envelope({ calls: { [slot.callId]: slot.signature } });
        done(carrier, "completed");
      }
    }
  }

  function closeAll(itemStatus: ItemStatus): void {
    closeOpen(itemStatus);
    closeCalls(itemStatus);
  }

  function text(value: string): void {
    if (value === "") return;
    if (open?.kind !== "message") {
      closeAll("completed");
      open = openMessage();
    }
    open.text += value;
    const n = sequence++;
    if (push !== discard) {
      const json = `{"type":"response.output_text.delta","sequence_number":${n}${open.head}${JSON.stringify(value)},"logprobs":[]}`;
      push(sse ? `event: response.output_text.delta\ndata: ${json}\n\n` : json);
    }
  }

  /** Reasoning blocks as the reasoning collector (core/reasoning-parts.ts) cuts them: one item per block. */
  function reasoning(delta: ReasoningDelta): void {
    if (delta.redactedData !== undefined) {
      closeAll("completed");
      const slot = openReasoning();
      slot.encrypted = envelope({ redactedData: delta.redactedData });
      done(slot, "completed");
      return;
    }
    if (delta.text === "" && delta.signature === undefined) return;
    if (open?.kind !== "reasoning") {
      closeAll("completed");
      open = openReasoning();
    }
    const slot = open;
    if (delta.text !== "") {
      const at = { item_id: slot.id, output_index: slot.index, summary_index: 0 };
      if (!slot.summary) {
        slot.summary = true;
        emit("response.reasoning_summary_part.added", { ...at, part: { type: "summary_text", text: "" } });
      }
      slot.text += delta.text;
      emit("response.reasoning_summary_text.delta", { ...at, delta: delta.text });
    }
    if (delta.signature !== undefined) {
      slot.encrypted = envelope({ signature: delta.signature });
      closeOpen("completed");
    }
  }

  /** A new call's slot: a custom tool call for a freeform tool, under its namespace for a namespace member. */
  function callSlot(delta: ToolCallDelta): CallSlot {
    const declared = delta.name === undefined ? undefined : options.calls?.get(delta.name);
    const name = declared?.namespace?.member ?? delta.name ?? "";
    const namespace = declared?.namespace?.name;
    const common = { index: slots.length, callId: delta.id ?? "", name, ...(namespace === undefined ? {} : { namespace }) };
    return declared?.freeform ? { kind: "custom_tool_call", id: slotId("ctc"), decoder: createFreeformDecoder(), ...common } : { kind: "function_call", id: slotId("fc"), args: "", ...common };
  }

  function toolCall(delta: ToolCallDelta): void {
    closeOpen("completed");
    let slot = calls.get(delta.index);
    if (!slot) {
      // One output item at a time, as OpenAI streams parallel calls: a new call means the one before it is
      // complete (providers stream calls one after another), so its `.done` events go out before this `.added`.
      closeCalls("completed");
      slot = callSlot(delta);
      calls.set(delta.index, slot);
      add(slot);
    }
    if (delta.id) slot.callId = delta.id;
    if (delta.signature !== undefined) slot.signature = delta.signature;
    // A fragment for a call already closed (text or another call came between) still goes to its item: no
    // provider does this, and the terminal event carries the whole call either way.
    if (delta.arguments === "") return;
    if (slot.kind === "custom_tool_call") {
      const text = slot.decoder.push(delta.arguments);
      if (text !== "") emit("response.custom_tool_call_input.delta", { item_id: slot.id, output_index: slot.index, delta: text });
      return;
    }
    slot.args += delta.arguments;
    emit("response.function_call_arguments.delta", { item_id: slot.id, output_index: slot.index, delta: delta.arguments });
  }

  /** A hosted tool's item, whole: opened and closed at once, as the provider already ran it. */
  function hostedItem(delta: HostedItemDelta): void {
    const item = hostedOutputItem(delta, () => slotId("ws"));
    if (!item) return;
    closeAll("completed");
    const slot: Slot = { kind: "hosted", index: slots.length, id: item.id, item };
    add(slot);
    done(slot, "completed");
  }

  /**
   * A tool the gateway ran (call/gateway-tool-loop.ts), as OpenAI streams
   * its own MCP items: a listing opened and closed at once; a call opened
   * with its arguments, closed with its result (`.completed` or `.failed`).
   */
  function gatewayTool(event: GatewayToolEvent): void {
    if (event.kind === "list") {
      closeAll("completed");
      const tools = event.tools.map((t) => ({ name: t.name, description: t.description ?? null, input_schema: t.inputSchema, annotations: t.annotations ?? null }));
      const id = slotId("mcpl");
      const slot: Slot = { kind: "mcp", index: slots.length, id, item: { type: "mcp_list_tools", id, server_label: event.server, tools, error: null } };
      add(slot);
      emit("response.mcp_list_tools.in_progress", { item_id: slot.id, output_index: slot.index });
      emit("response.mcp_list_tools.completed", { item_id: slot.id, output_index: slot.index });
      done(slot, "completed");
      return;
    }
    if (event.kind === "call") {
      closeAll("completed");
      const id = slotId("mcp");
      const slot: Extract<Slot, { kind: "mcp" }> = {
        kind: "mcp",
        index: slots.length,
        id,
        item: { type: "mcp_call", id, server_label: event.server, name: event.tool, arguments: event.arguments, output: null, error: null, approval_request_id: null, status: "calling" },
      };
      mcpCalls.set(event.id, slot);
      add(slot);
      const at = { item_id: id, output_index: slot.index };
      emit("response.mcp_call.in_progress", at);
      if (event.arguments !== "") emit("response.mcp_call_arguments.delta", { ...at, delta: event.arguments });
      emit("response.mcp_call_arguments.done", { ...at, arguments: event.arguments });
      return;
    }
    const slot = mcpCalls.get(event.id);
    if (slot?.item.type !== "mcp_call") return;
    mcpCalls.delete(event.id);
    const failed = event.isError || event.failure !== undefined;
    slot.item = { ...slot.item, output: event.failure ? null : event.output, error: failed ? (event.failure?.message ?? event.output) : null, status: failed ? "failed" : "completed" };
    emit(failed ? "response.mcp_call.failed" : "response.mcp_call.completed", { item_id: slot.id, output_index: slot.index });
    done(slot, failed ? "incomplete" : "completed");
  }

  function finish(reason: FinishReason): void {
    const end = terminal(reason);
    closeAll(end.status === "completed" ? "completed" : "incomplete");
    status = end.status;
    incomplete = end.details;
    completedAt = options.background?.completedAt ?? seconds();
    emit(end.status === "completed" ? "response.completed" : "response.incomplete", { response: response() });
  }

  function handle(delta: Delta): void {
    if (status !== "in_progress") return;
    switch (delta.type) {
      case "start":
        if (started) return;
        started = true;
        id = delta.responseId;
        servedModel = delta.model;
        provider = delta.provider;
        itemBase = id.replace(/^resp_/, "");
        emit("response.created", { response: response() });
        emit("response.in_progress", { response: response() });
        return;
      case "text":
        return text(delta.text);
      case "reasoning":
        return reasoning(delta);
      case "tool_call":
        return toolCall(delta);
      case "hosted_item":
        return hostedItem(delta);
      case "gateway_tool":
        return gatewayTool(delta.event);
      case "usage":
        usage = usageOf(delta);
        return;
      case "logprobs":
        // Served only with include: ["message.output_text.logprobs"], which this edge refuses.
        return;
      case "finish":
        return finish(delta.reason);
    }
  }

  return {
    events(delta, into) {
      push = into;
      try {
        handle(delta);
      } finally {
        push = discard;
      }
    },
    failedEvents(reason, into) {
      if (status !== "in_progress") return;
      push = into;
      try {
        const { status: httpStatus, body } = toResponsesError(reason, options.param ?? responsesParam);
        // Strict clients read one item open at a time to the end: what was open closes as incomplete first.
        if (started) closeAll("incomplete");
        status = "failed";
        error = { code: httpStatus === 429 ? "rate_limit_exceeded" : "server_error", message: body.error.message };
        if (started) emit("response.failed", { response: response() });
        emit("error", { code: body.error.code, message: body.error.message, param: body.error.param, error: body.error });
      } finally {
        push = discard;
      }
    },
    response,
  };
}

/** The deltas a stream with this result could have been, in the order of the result's fields. */
function* deltasOf(result: ChatResult): Generator<Delta> {
  yield { type: "start", responseId: result.responseId, provider: result.provider, model: result.model };
  for (const part of result.reasoningParts) {
    yield part.redactedData !== undefined ? { type: "reasoning", text: "", redactedData: part.redactedData } : { type: "reasoning", text: part.text, signature: part.signature };
  }
  yield { type: "text", text: result.text };
  for (const [index, call] of result.toolCalls.entries()) {
    yield { type: "tool_call", index, id: call.id, name: call.name, arguments: call.arguments, signature: call.signature };
  }
  if (result.usage) yield { type: "usage", ...result.usage };
  yield { type: "finish", reason: result.finishReason };
}

/**
 * A whole answer as a `response` object. It is what the encoder ends with
 * for the same answer, except that a result keeps no order between its
 * reasoning, text and calls, so they come in that order: the route encodes
 * the deltas themselves (`responseFromDeltas`). (`output_text` is no field
 * of the wire object: the SDKs compute it.)
 */
export function responseFromResult(result: ChatResult, options: ResponseEncoderOptions): ResponseObject {
  const encoder = createResponseEncoder(options);
  for (const delta of deltasOf(result)) encoder.events(delta, discard);
  return encoder.response();
}

/**
 * A whole answer as a `response` object, for `stream: false`, from the
 * deltas as they came: the streaming encoder with its frames unwritten, so
 * both ways of asking get the same items in the same order. The order
 * carries replay state a result loses (`responseFromResult`): Gemini signs
 * answer text with a signature that arrives after it and must go back on it.
 * Deltas that end without `finish` end the response as a result without one
 * does (`unspecified`: completed). Also says which parameters the target's
 * alias dropped (from `start`).
 */
export async function responseFromDeltas(deltas: AsyncIterable<Delta>, options: ResponseEncoderOptions): Promise<{ response: ResponseObject; droppedParams: readonly string[] }> {
  const encoder = createResponseEncoder(options);
  let droppedParams: readonly string[] = [];
  for await (const delta of deltas) {
    if (delta.type === "start") droppedParams = delta.droppedParams ?? [];
    encoder.events(delta, discard);
  }
  // Ignored after a finish: the encoder adds nothing once the response ended.
  encoder.events({ type: "finish", reason: "unspecified" }, discard);
  return { response: encoder.response(), droppedParams };
}
