import { request } from "undici";

/** One SSE event as a strict client parses it: its `event:` name and its JSON data. */
export interface WireEvent {
  readonly event: string | undefined;
  readonly data: Record<string, unknown>;
}

/** Posts a JSON body and reads the whole SSE answer as named events (comments skipped; `[DONE]` kept as `{done: true}`). */
export async function postForEvents(url: string, headers: Record<string, string>, body: unknown): Promise<{ status: number; events: WireEvent[]; text: string }> {
  const res = await request(url, { method: "POST", headers: { "content-type": "application/json", ...headers }, body: JSON.stringify(body) });
  const text = await res.body.text();
  const events: WireEvent[] = [];
  for (const block of text.split(/\r?\n\r?\n/)) {
    let event: string | undefined;
    const data: string[] = [];
    for (const line of block.split(/\r?\n/)) {
      if (line.startsWith("event:")) event = line.slice(6).trim();
      else if (line.startsWith("data:")) data.push(line.slice(5).trimStart());
    }
    if (data.length === 0) continue;
    const joined = data.join("\n");
    events.push({ event, data: joined === "[DONE]" ? { done: true } : (JSON.parse(joined) as Record<string, unknown>) });
  }
  return { status: res.statusCode, events, text };
}

/** How a stream ended, as its dialect says it. */
export type Ending = "completed" | "incomplete" | "failed";

/** What a conformant stream carried, for the scenario's own assertions. */
export interface StreamSummary {
  readonly ending: Ending;
  /** The answer's text as the deltas built it. */
  readonly text: string;
  /** The items or content blocks by type, in order. */
  readonly parts: readonly string[];
}

const isInt = (v: unknown): boolean => typeof v === "number" && Number.isInteger(v) && v >= 0;

/**
 * Checks a Responses stream against the API's event rules and returns what
 * it carried; throws naming the first event that breaks one. The rules:
 * `sequence_number` counts from 0 without a gap, `response.created` then
 * `response.in_progress` open it, one output item is open at a time (added
 * at the next `output_index`, closed with its id and a final status before
 * the next is added), every item-scoped event names the open item, content
 * parts open and close in order, and the terminal event's `response.output`
 * is the list of closed items. A failure is `response.failed` followed by
 * `error`, and nothing after.
 */
export function checkResponsesStream(events: readonly WireEvent[]): StreamSummary {
  const fail = (i: number, why: string): never => {
    throw new Error(`Responses event ${i} (${String(events[i]?.data.type)}): ${why}`);
  };
  if (events.length < 3) fail(0, `only ${events.length} events`);
  const closed: Array<{ id: string; type: string }> = [];
  let open: { id: string; type: string; index: number; parts: number; partOpen: boolean } | undefined;
  let ending: Ending | undefined;
  let text = "";
  let argsById = new Map<string, string>();
  events.forEach((e, i) => {
    const d = e.data;
    const type = d.type as string;
    if (e.event !== undefined && e.event !== type) fail(i, `event name ${e.event} is not its type`);
    if (d.sequence_number !== i) fail(i, `sequence_number ${String(d.sequence_number)}, expected ${i}`);
    if (i === 0 && type !== "response.created") fail(i, "the first event is not response.created");
    if (i === 1 && type !== "response.in_progress") fail(i, "the second event is not response.in_progress");
    if (ending !== undefined && !(ending === "failed" && type === "error" && i === events.length - 1)) fail(i, `an event after response.${ending}`);
    if ("output_index" in d && open === undefined && type !== "response.output_item.added") fail(i, "an item event with no item open");
    if ("output_index" in d && type !== "response.output_item.added" && d.output_index !== open!.index) fail(i, `output_index ${String(d.output_index)} is not the open item's ${open!.index}`);
    if ("item_id" in d && d.item_id !== open?.id) fail(i, `item_id ${String(d.item_id)} is not the open item's`);
    switch (type) {
      case "response.output_item.added": {
        if (open) fail(i, `item ${open.index} is still open`);
        const item = d.item as { id: string; type: string; status?: string };
        if (d.output_index !== closed.length) fail(i, `output_index ${String(d.output_index)}, expected ${closed.length}`);
        if (item.type !== "reasoning" && item.status !== "in_progress") fail(i, `an added item's status is ${String(item.status)}`);
        open = { id: item.id, type: item.type, index: closed.length, parts: 0, partOpen: false };
        break;
      }
      case "response.output_item.done": {
        const item = d.item as { id: string; type: string; status?: string; arguments?: string };
        if (!open || item.id !== open.id) fail(i, "closes an item that is not open");
        if (open!.partOpen) fail(i, "closes an item whose content part is open");
        if (!["completed", "incomplete"].includes(item.status ?? "")) fail(i, `a done item's status is ${String(item.status)}`);
        if (item.type === "function_call" && item.arguments !== (argsById.get(item.id) ?? "")) fail(i, "the item's arguments are not its deltas");
        if (item.type === "function_call") JSON.parse(item.arguments ?? "");
        closed.push({ id: item.id, type: item.type });
        open = undefined;
        break;
      }
      case "response.content_part.added":
        if (open!.partOpen || d.content_index !== open!.parts) fail(i, `content part ${String(d.content_index)} opened out of order`);
        open!.partOpen = true;
        break;
      case "response.content_part.done":
        if (!open!.partOpen || d.content_index !== open!.parts) fail(i, `content part ${String(d.content_index)} closed out of order`);
        open!.partOpen = false;
        open!.parts++;
        break;
      case "response.output_text.delta":
        if (!open!.partOpen || d.content_index !== open!.parts) fail(i, "a text delta outside its open part");
        text += d.delta as string;
        break;
      case "response.function_call_arguments.delta":
        argsById.set(open!.id, (argsById.get(open!.id) ?? "") + (d.delta as string));
        break;
      case "response.completed":
      case "response.incomplete":
      case "response.failed": {
        if (open) fail(i, `item ${open.index} is still open at the end`);
        const response = d.response as { status: string; output: Array<{ id: string; type: string }>; error: unknown; usage?: Record<string, unknown> | null };
        ending = type.slice("response.".length) as Ending;
        if (response.status !== ending) fail(i, `response.status ${response.status}`);
        if (response.output.length !== closed.length || response.output.some((o, k) => o.id !== closed[k]!.id || o.type !== closed[k]!.type)) fail(i, "response.output is not the closed items");
        if (ending === "failed" && !response.error) fail(i, "a failed response without its error");
        if (ending === "completed" && (!response.usage || !isInt(response.usage.input_tokens) || !isInt(response.usage.output_tokens))) fail(i, "usage is not integers");
        break;
      }
      case "error":
        if (ending !== "failed") fail(i, "an error event not after response.failed");
        break;
    }
  });
  if (ending === undefined) fail(events.length - 1, "the stream ended without a terminal event");
  if (ending === "failed" && events.at(-1)!.data.type !== "error") fail(events.length - 1, "response.failed without the error event after it");
  argsById = new Map();
  return { ending: ending!, text, parts: closed.map((c) => c.type) };
}

const DELTA_FOR: Record<string, readonly string[]> = {
  text: ["text_delta", "citations_delta"],
  tool_use: ["input_json_delta"],
  server_tool_use: ["input_json_delta"],
  thinking: ["thinking_delta", "signature_delta"],
  redacted_thinking: [],
};

function checkUsage(usage: Record<string, unknown> | undefined, fields: readonly string[]): string | undefined {
  if (!usage) return "no usage";
  for (const f of fields) if (!isInt(usage[f])) return `usage.${f} is ${JSON.stringify(usage[f])}`;
  for (const f of ["cache_read_input_tokens", "cache_creation_input_tokens"]) if (f in usage && !isInt(usage[f])) return `usage.${f} is ${JSON.stringify(usage[f])}`;
  return undefined;
}

/**
 * Checks a Messages stream against Anthropic's event rules: `message_start`
 * first with integer usage, content blocks started at the next index and
 * stopped before the next starts, each delta of its block's kind and on the
 * open block, then `message_delta` (a stop reason, integer usage) and
 * `message_stop` last; `ping` anywhere. A failure is one `error` event
 * that ends the stream. Throws naming the first event that breaks a rule.
 */
export function checkMessagesStream(events: readonly WireEvent[]): StreamSummary {
  const fail = (i: number, why: string): never => {
    throw new Error(`Messages event ${i} (${String(events[i]?.data.type)}): ${why}`);
  };
  const blocks: string[] = [];
  let open: { index: number; type: string; json: string } | undefined;
  let ending: Ending | undefined;
  let stopReason: string | undefined;
  let text = "";
  events.forEach((e, i) => {
    const d = e.data;
    const type = d.type as string;
    if (e.event !== type) fail(i, `event name ${String(e.event)} is not its type`);
    if (i === 0 && type !== "message_start") fail(i, "the first event is not message_start");
    if (ending !== undefined) fail(i, "an event after the stream's end");
    switch (type) {
      case "ping":
        break;
      case "message_start": {
        if (i !== 0) fail(i, "message_start twice");
        const why = checkUsage((d.message as { usage?: Record<string, unknown> }).usage, ["input_tokens", "output_tokens"]);
        if (why) fail(i, why);
        break;
      }
      case "content_block_start": {
        if (open) fail(i, `block ${open.index} is still open`);
        if (stopReason !== undefined) fail(i, "a block after message_delta");
        const block = d.content_block as { type: string };
        if (d.index !== blocks.length) fail(i, `index ${String(d.index)}, expected ${blocks.length}`);
        if (!(block.type in DELTA_FOR)) fail(i, `unknown block type ${block.type}`);
        open = { index: blocks.length, type: block.type, json: "" };
        blocks.push(block.type);
        break;
      }
      case "content_block_delta": {
        const delta = d.delta as { type: string; text?: string; partial_json?: string };
        if (!open || d.index !== open.index) fail(i, `a delta for block ${String(d.index)}, which is not open`);
        if (!DELTA_FOR[open!.type]!.includes(delta.type)) fail(i, `a ${delta.type} in a ${open!.type} block`);
        if (delta.type === "text_delta") text += delta.text ?? "";
        if (delta.type === "input_json_delta") open!.json += delta.partial_json ?? "";
        break;
      }
      case "content_block_stop":
        if (!open || d.index !== open.index) fail(i, `stops block ${String(d.index)}, which is not open`);
        if (open!.type === "tool_use") JSON.parse(open!.json === "" ? "{}" : open!.json);
        open = undefined;
        break;
      case "message_delta": {
        if (open) fail(i, `block ${open.index} is still open`);
        stopReason = (d.delta as { stop_reason?: string }).stop_reason ?? undefined;
        if (!stopReason) fail(i, "message_delta without a stop reason");
        const why = checkUsage(d.usage as Record<string, unknown>, ["output_tokens"]);
        if (why) fail(i, why);
        break;
      }
      case "message_stop":
        if (stopReason === undefined) fail(i, "message_stop before message_delta");
        ending = stopReason === "max_tokens" ? "incomplete" : "completed";
        break;
      case "error":
        if (!(d.error as { type?: string } | undefined)?.type) fail(i, "an error without its type");
        ending = "failed";
        break;
      default:
        fail(i, "an event type the API does not send");
    }
  });
  if (ending === undefined) fail(events.length - 1, "the stream ended without message_stop or error");
  return { ending: ending!, text, parts: blocks };
}
