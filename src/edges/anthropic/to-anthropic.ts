import type { Delta, GatewayToolEvent, ReasoningDelta, ToolCallDelta, Usage } from "../../core/delta.js";
import type { Heartbeat } from "../../core/heartbeats.js";
import { toAnthropicError } from "./anthropic-errors.js";
import { type AnthropicMessage, anthropicUsage, type ContentBlock, messageId, stopReason, UNKNOWN_USAGE } from "./anthropic-message.js";
import { mcpBlock } from "./mcp-blocks.js";

/** One SSE frame as the Messages API sends it: the event name, and data that repeats it as `type`. */
function frame(type: string, data: Record<string, unknown>): string {
  return `event: ${type}\ndata: ${JSON.stringify({ type, ...data })}\n\n`;
}

/** A keepalive the SDKs read and skip; heartbeats (core/heartbeats.ts) become this. */
export const PING_FRAME = frame("ping", {});

/**
 * A failure after the stream began: an `error` event with the same body as
 * an HTTP error (anthropic-errors.ts), and no message_stop after it, so the
 * SDK raises instead of returning a truncated message.
 */
export function errorEvent(reason: unknown, requestId?: string): string {
  const { body } = toAnthropicError(reason, requestId);
  return `event: error\ndata: ${JSON.stringify(body)}\n\n`;
}

/** The content block being written: its index on the wire and what it is. */
type OpenBlock = { readonly kind: "text"; readonly index: number; readonly prefix: string } | { readonly kind: "thinking"; readonly index: number; signed: boolean } | { readonly kind: "tool"; readonly index: number };

export interface MessageEncoder {
  /** The frames for one delta (or heartbeat), handed to `push` in order. */
  events(delta: Delta | Heartbeat, push: (frame: string) => void): void;
}

/**
 * Deltas as the Messages API's stream, one encoder per response: message_start
 * at `start`, then content blocks opened, filled and closed as the kind of
 * delta changes (text, thinking with its signature, redacted thinking, one
 * block per tool call), then message_delta with the stop reason and usage at
 * `finish`, and message_stop. The order is the one @anthropic-ai/sdk's
 * MessageStream assembles (test/anthropic-codec.test.ts feeds it these frames).
 *
 * A signature closes its thinking block: more reasoning after it opens a
 * new one, as the blocks of a ChatResult (core/reasoning-parts.ts) are cut.
 * A tool call's later pieces go to its block's index even if another block
 * came between (no provider interleaves them; the SDK accumulates by index).
 *
 * A signature alone after text or a tool call (Gemini signs its text parts,
 * the signature coming after the text) is held: written as its own thinking
 * block before the next content, dropped if the message ends first. Claude
 * never ends a message with a thinking block, and clients read the answer
 * from the last block (Claude Code's `result` was empty); Gemini asks for
 * text signatures back only as a recommendation, not a requirement.
 */
export function createMessageEncoder(options: { readonly requestModel: string }): MessageEncoder {
  let nextIndex = 0;
  let open: OpenBlock | undefined;
  const toolBlocks = new Map<number, number>();
  let usage: Usage | undefined;
  let heldSignature: string | undefined;

  function close(push: (frame: string) => void): void {
    if (!open) return;
    push(frame("content_block_stop", { index: open.index }));
    open = undefined;
  }

  function start(block: ContentBlock, push: (frame: string) => void): number {
    close(push);
    if (heldSignature !== undefined) {
      const signature = heldSignature;
      heldSignature = undefined;
      const index = nextIndex++;
      push(frame("content_block_start", { index, content_block: { type: "thinking", thinking: "", signature: "" } }));
      push(frame("content_block_delta", { index, delta: { type: "signature_delta", signature } }));
      push(frame("content_block_stop", { index }));
    }
    const index = nextIndex++;
    push(frame("content_block_start", { index, content_block: block }));
    return index;
  }

  function text(value: string, push: (frame: string) => void): void {
    if (value === "") return;
    if (open?.kind !== "text") {
      const index = start({ type: "text", text: "" }, push);
      // The one delta that comes by the thousand: its frame is a prefix fixed per block and the JSON string.
      open = { kind: "text", index, prefix: `event: content_block_delta\ndata: {"type":"content_block_delta","index":${index},"delta":{"type":"text_delta","text":` };
    }
    push(`${open.prefix}${JSON.stringify(value)}}}\n\n`);
  }

  function reasoning(delta: ReasoningDelta, push: (frame: string) => void): void {
    if (delta.redactedData !== undefined) {
      start({ type: "redacted_thinking", data: delta.redactedData }, push);
      push(frame("content_block_stop", { index: nextIndex - 1 }));
      return;
    }
    if (delta.text === "" && delta.signature === undefined) return;
    if (delta.text === "" && (open?.kind === "text" || open?.kind === "tool")) {
      heldSignature = delta.signature;
      return;
    }
    if (open?.kind !== "thinking" || open.signed) {
      open = { kind: "thinking", index: start({ type: "thinking", thinking: "", signature: "" }, push), signed: false };
    }
    if (delta.text !== "") push(frame("content_block_delta", { index: open.index, delta: { type: "thinking_delta", thinking: delta.text } }));
    if (delta.signature !== undefined) {
      push(frame("content_block_delta", { index: open.index, delta: { type: "signature_delta", signature: delta.signature } }));
      open.signed = true;
    }
  }

  function toolCall(delta: ToolCallDelta, push: (frame: string) => void): void {
    let index = toolBlocks.get(delta.index);
    if (index === undefined) {
      index = start({ type: "tool_use", id: delta.id ?? "", name: delta.name ?? "", input: {} }, push);
      toolBlocks.set(delta.index, index);
      open = { kind: "tool", index };
    } else if (open?.index !== index) close(push);
    if (delta.arguments !== "") push(frame("content_block_delta", { index, delta: { type: "input_json_delta", partial_json: delta.arguments } }));
  }

  /**
   * A tool the gateway ran (call/gateway-tool-loop.ts) as Anthropic's MCP
   * connector shows one: an `mcp_tool_use` block and its `mcp_tool_result`,
   * each whole. The listing has no block in this API.
   */
  function gatewayTool(event: GatewayToolEvent, push: (frame: string) => void): void {
    const block = mcpBlock(event);
    if (!block) return;
    const index = start(block, push);
    push(frame("content_block_stop", { index }));
  }

  return {
    events(delta, push) {
      switch (delta.type) {
        case "heartbeat":
          push(PING_FRAME);
          return;
        case "start": {
          const message: AnthropicMessage = {
            id: messageId(delta.responseId),
            type: "message",
            role: "assistant",
            model: options.requestModel,
            content: [],
            stop_reason: null,
            stop_sequence: null,
            // The input the upstream stated up front (Anthropic does; Claude Code's cost display reads it), else zeros.
            usage: delta.inputUsage ? anthropicUsage(delta.inputUsage) : UNKNOWN_USAGE,
          };
          push(frame("message_start", { message }));
          return;
        }
        case "text":
          return text(delta.text, push);
        case "reasoning":
          return reasoning(delta, push);
        case "tool_call":
          return toolCall(delta, push);
        case "usage":
          usage = delta;
          return;
        case "logprobs":
          // The request cannot ask for them here, and Anthropic's stream has no field for them.
          return;
        case "hosted_item":
          // Anthropic's own server tool blocks go out whole; another API's items have no block here.
          if (delta.origin !== "anthropic") return;
          start(delta.item as ContentBlock, push);
          push(frame("content_block_stop", { index: nextIndex - 1 }));
          return;
        case "gateway_tool":
          return gatewayTool(delta.event, push);
        case "finish": {
          close(push);
          const stop = { stop_reason: stopReason(delta.reason, delta.stopSequence), stop_sequence: delta.stopSequence ?? null };
          // output_tokens is always present: the SDK copies it whatever else the event carries.
          push(frame("message_delta", { delta: stop, usage: anthropicUsage(usage) }));
          push(frame("message_stop", {}));
          return;
        }
      }
    },
  };
}
