import type { FreeformDecoder } from "./freeform-input.js";
import type { HostedCallOutput, ItemStatus, McpCallOutput, McpListToolsOutput, OutputItem, OutputText } from "./response-object.js";

/**
 * One output item while it streams: what it has gathered so far, and its
 * status once its `.done` events went out. The encoder keeps these, in
 * output order, and builds item objects from them whenever an event or the
 * final response needs one.
 */
export type Slot = {
  readonly index: number;
  readonly id: string;
  /** Set when the item's done events were sent. */
  closed?: ItemStatus;
} & (
  | { readonly kind: "message"; text: string; readonly head: string }
  | { readonly kind: "reasoning"; text: string; summary: boolean; encrypted?: string }
  | { readonly kind: "function_call"; callId: string; name: string; args: string; signature?: string; namespace?: string }
  | { readonly kind: "custom_tool_call"; callId: string; name: string; readonly decoder: FreeformDecoder; signature?: string; namespace?: string }
  | { readonly kind: "hosted"; readonly item: HostedCallOutput }
  /** A tool the gateway itself listed or ran (call/gateway-tool-loop.ts): the item as it stands. */
  | { readonly kind: "mcp"; item: McpListToolsOutput | McpCallOutput }
);

/** The call kinds: their `.done` events wait until the next item opens. */
export type CallSlot = Extract<Slot, { kind: "function_call" | "custom_tool_call" }>;

const ns = (namespace: string | undefined) => (namespace === undefined ? {} : { namespace });

export function outputText(text: string): OutputText {
  return { type: "output_text", text, annotations: [], logprobs: [] };
}

/** The slot as an output item with this status. */
export function itemOf(slot: Slot, status: ItemStatus): OutputItem {
  switch (slot.kind) {
    case "message":
      return { type: "message", id: slot.id, status, role: "assistant", content: [outputText(slot.text)] };
    case "reasoning":
      return {
        type: "reasoning",
        id: slot.id,
        summary: slot.summary ? [{ type: "summary_text", text: slot.text }] : [],
        encrypted_content: slot.encrypted,
        status,
      };
    case "function_call":
      return { type: "function_call", id: slot.id, call_id: slot.callId, name: slot.name, ...ns(slot.namespace), arguments: slot.args, status };
    case "custom_tool_call":
      return { type: "custom_tool_call", id: slot.id, call_id: slot.callId, name: slot.name, ...ns(slot.namespace), input: slot.decoder.input };
    case "hosted":
      return slot.item;
    case "mcp":
      return slot.item.type === "mcp_call" && slot.item.status === "calling" && status !== "in_progress" ? { ...slot.item, status: "incomplete" } : slot.item;
  }
}

/** The item as `response.output_item.added` announces it: nothing gathered yet. */
export function addedItemOf(slot: Slot): OutputItem {
  switch (slot.kind) {
    case "message":
      return { type: "message", id: slot.id, status: "in_progress", role: "assistant", content: [] };
    case "reasoning":
      return { type: "reasoning", id: slot.id, summary: [], status: "in_progress" };
    case "function_call":
      return { type: "function_call", id: slot.id, call_id: slot.callId, name: slot.name, ...ns(slot.namespace), arguments: "", status: "in_progress" };
    case "custom_tool_call":
      return { type: "custom_tool_call", id: slot.id, call_id: slot.callId, name: slot.name, ...ns(slot.namespace), input: "" };
    case "hosted":
      return { ...slot.item, status: "in_progress" };
    case "mcp":
      return slot.item.type === "mcp_list_tools" ? { ...slot.item, tools: [] } : { ...slot.item, arguments: "", output: null, error: null, status: "in_progress" };
  }
}
