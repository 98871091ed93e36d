import { type ChatMessage, type ContentPart, flatToolName, type ReasoningPart, type ToolCall } from "../../core/chat-request.js";
import { quoteClientValue } from "../../core/client-text.js";
import type { ReplayOrigin } from "../../core/replay-origins.js";
import { NAME_SEPARATOR } from "../../mcp/contract.js";
import { decodeReasoning } from "./encrypted-reasoning.js";
import { assistantPart, contentParts, inputPart, outputPart } from "./input-parts.js";
import { invalidField, parseAt } from "./invalid-field.js";
import { mcpCallItem } from "./mcp-tools.js";
import { customToolCallItem, customToolCallOutputItem, functionCallItem, functionCallOutputItem, hostedCallItem, messageItem, type ReasoningItem, reasoningItem } from "./responses-schema.js";

/** Where each canonical message came from, so validation errors name the item the caller sent. */
export interface MessageSource {
  /** The item (`input[3]`; for an assistant turn of several items, its first). */
  readonly path: string;
  /** The field holding its content: `input[3].content`, `input[4].output`, `instructions`, `input`. */
  readonly content: string;
  /** Per canonical content part: the part or item it came from. */
  readonly parts: readonly string[];
  /** Per tool call: its function_call item. */
  readonly calls: readonly string[];
}

export interface DecodedInput {
  readonly messages: readonly ChatMessage[];
  readonly sources: readonly MessageSource[];
  readonly origins: readonly ReplayOrigin[];
}

/** An assistant turn being gathered: consecutive assistant messages, reasoning and function calls are one message. */
interface Turn {
  readonly path: string;
  readonly content: ContentPart[];
  readonly parts: string[];
  readonly calls: ToolCall[];
  readonly callPaths: string[];
  /** Origins of this turn's parts, by part index (the message index is known when the turn ends). */
  readonly origins: Array<{ part: number; provider: string; model: string }>;
}

interface CallSignature {
  readonly signature: string;
  readonly provider: string;
  readonly model: string;
}

/** The reasoning part an item replays, if it carries any. */
function reasoningPart(item: ReasoningItem, at: string, signatures: Map<string, CallSignature>): { part?: ReasoningPart; provider?: string; model?: string } {
  const content = item.content?.map((c) => c.text).join("") ?? "";
  const text = content !== "" ? content : (item.summary ?? []).map((s) => s.text).join("\n\n");
  if (!item.encrypted_content) return text === "" ? {} : { part: { type: "reasoning", text } };
  const envelope = decodeReasoning(item.encrypted_content, `${at}.encrypted_content`);
  for (const [callId, signature] of Object.entries(envelope.calls ?? {})) {
    signatures.set(callId, { signature, provider: envelope.provider, model: envelope.model });
  }
  const origin = { provider: envelope.provider, model: envelope.model };
  if (envelope.redactedData !== undefined) return { part: { type: "reasoning", text: "", redactedData: envelope.redactedData }, ...origin };
  if (envelope.signature !== undefined) return { part: { type: "reasoning", text, signature: envelope.signature }, ...origin };
  return text === "" ? {} : { part: { type: "reasoning", text } };
}

function itemType(item: unknown, at: string): string {
  if (item === null || typeof item !== "object" || Array.isArray(item)) invalidField(at, "must be an object");
  const type = (item as { type?: unknown }).type;
  if (type === undefined && "role" in item) return "message";
  if (typeof type !== "string") invalidField(`${at}.type`, "must name the item's type");
  return type;
}

/**
 * The conversation in `input` (and `instructions`) as canonical messages.
 * Consecutive assistant-side items (assistant messages, reasoning,
 * function calls) are one assistant turn, as one Chat Completions message
 * would be; the order of its reasoning and text parts is kept, because
 * Gemini puts a text part's signature back on the part before it. Reasoning
 * items from this gateway become reasoning parts with their signatures
 * (`encrypted-reasoning.ts`); call signatures go onto the calls they name.
 */
export function messagesFromInput(input: string | readonly unknown[], instructions: string | undefined): DecodedInput {
  const messages: ChatMessage[] = [];
  const sources: MessageSource[] = [];
  const origins: ReplayOrigin[] = [];
  const signatures = new Map<string, CallSignature>();
  let turn: Turn | undefined;

  const push = (message: ChatMessage, source: MessageSource) => {
    messages.push(message);
    sources.push(source);
  };
  const endTurn = () => {
    if (!turn) return;
    if (turn.content.length > 0 || turn.calls.length > 0) {
      const index = messages.length;
      for (const o of turn.origins) origins.push({ message: index, ...o });
      push({ role: "assistant", content: turn.content, toolCalls: turn.calls.length > 0 ? turn.calls : undefined }, { path: turn.path, content: `${turn.path}.content`, parts: turn.parts, calls: turn.callPaths });
    }
    turn = undefined;
  };
  const openTurn = (at: string): Turn => (turn ??= { path: at, content: [], parts: [], calls: [], callPaths: [], origins: [] });

  if (instructions) push({ role: "system", content: [{ type: "text", text: instructions }] }, { path: "instructions", content: "instructions", parts: ["instructions"], calls: [] });
  if (typeof input === "string") {
    push({ role: "user", content: input === "" ? [] : [{ type: "text", text: input }] }, { path: "input", content: "input", parts: ["input"], calls: [] });
    return { messages, sources, origins };
  }

  input.forEach((item, i) => {
    const at = `input[${i}]`;
    const type = itemType(item, at);
    switch (type) {
      case "message": {
        const m = parseAt(messageItem, item, at);
        if (m.role === "assistant") {
          const t = openTurn(at);
          const { parts, paths } = contentParts(m.content, `${at}.content`, assistantPart);
          t.content.push(...parts);
          t.parts.push(...paths);
          return;
        }
        endTurn();
        const { parts, paths } = contentParts(m.content, `${at}.content`, inputPart);
        push({ role: m.role === "user" ? "user" : "system", content: parts }, { path: at, content: `${at}.content`, parts: paths, calls: [] });
        return;
      }
      case "function_call": {
        const call = parseAt(functionCallItem, item, at);
        const t = openTurn(at);
        t.calls.push({ id: call.call_id, name: call.namespace ? flatToolName(call.namespace, call.name) : call.name, arguments: call.arguments });
        t.callPaths.push(at);
        return;
      }
      case "custom_tool_call": {
        // A freeform call in its canonical form: a function of one string, `input` (core/chat-request.ts).
        const call = parseAt(customToolCallItem, item, at);
        const t = openTurn(at);
        t.calls.push({ id: call.call_id, name: call.namespace ? flatToolName(call.namespace, call.name) : call.name, arguments: JSON.stringify({ input: call.input }) });
        t.callPaths.push(at);
        return;
      }
      case "web_search_call":
      case "file_search_call":
      case "code_interpreter_call":
      case "image_generation_call": {
        const t = openTurn(at);
        t.content.push({ type: "hosted_item", origin: "openai", item: parseAt(hostedCallItem, item, at) });
        t.parts.push(at);
        return;
      }
      case "reasoning": {
        const { part, provider, model } = reasoningPart(parseAt(reasoningItem, item, at), at, signatures);
        if (!part) return;
        const t = openTurn(at);
        if (provider !== undefined && model !== undefined) t.origins.push({ part: t.content.length, provider, model });
        t.content.push(part);
        t.parts.push(at);
        return;
      }
      case "function_call_output":
      case "custom_tool_call_output": {
        endTurn();
        const out = type === "function_call_output" ? parseAt(functionCallOutputItem, item, at) : parseAt(customToolCallOutputItem, item, at);
        const { parts, paths } = contentParts(out.output, `${at}.output`, outputPart);
        push({ role: "tool", toolCallId: out.call_id, content: parts }, { path: at, content: `${at}.output`, parts: paths, calls: [] });
        return;
      }
      case "mcp_list_tools":
        // A listing the gateway made for an earlier turn: a request that declares the server lists again.
        return;
      case "mcp_call": {
        // A call the gateway ran for an earlier turn: the model's call and its result, as the model saw them.
        const call = parseAt(mcpCallItem, item, at);
        const t = openTurn(at);
        t.calls.push({ id: call.id, name: `${call.server_label}${NAME_SEPARATOR}${call.name}`, arguments: call.arguments });
        t.callPaths.push(at);
        endTurn();
        const text = call.output ?? (call.error == null ? "" : `error: ${typeof call.error === "string" ? call.error : JSON.stringify(call.error)}`);
        push({ role: "tool", toolCallId: call.id, content: [{ type: "text", text }] }, { path: at, content: `${at}.output`, parts: [`${at}.output`], calls: [] });
        return;
      }
      case "item_reference":
        return invalidField(at, "item_reference points to a stored item, and this gateway stores none: send the item itself");
      default:
        return invalidField(`${at}.type`, `${quoteClientValue(type, 64)} items are not served here: send message, function_call, custom_tool_call, their outputs, reasoning, hosted tool call and mcp items`);
    }
  });
  endTurn();

  if (signatures.size > 0) {
    messages.forEach((m, i) => {
      if (!m.toolCalls) return;
      let signed = false;
      const calls = m.toolCalls.map((call, j) => {
        const found = signatures.get(call.id);
        if (!found) return call;
        signed = true;
        origins.push({ message: i, call: j, provider: found.provider, model: found.model });
        return { ...call, signature: found.signature };
      });
      if (signed) messages[i] = { ...m, toolCalls: calls };
    });
  }
  return { messages, sources, origins };
}
