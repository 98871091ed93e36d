import type { CacheMark, ChatMessage, ContentPart, ToolCall } from "../../core/chat-request.js";
import { GatewayError } from "../../core/errors.js";
import { TOOL_NAME } from "../../core/validate.js";
import { OPTION_LIMITS } from "../../core/validate-options.js";
import { NAME_SEPARATOR } from "../../mcp/contract.js";
import type { AnthropicMessageParam, CacheControlBody, SystemBlocks } from "./anthropic-schema.js";

type Blocks<R extends AnthropicMessageParam["role"]> = Extract<AnthropicMessageParam, { role: R }>["content"];

function invalid(field: string, problem: string): never {
  throw new GatewayError("invalid_request", `${field}: ${problem}`, { field });
}

/** Turns are built in order, tool_use ids remembered so each tool_result can be checked against an earlier call. */
interface Builder {
  readonly messages: ChatMessage[];
  readonly toolUseIds: Set<string>;
}

/** A `cache_control` as the canonical breakpoint (carried to Anthropic targets); null is none. */
export function cacheMark(control: CacheControlBody): { readonly cache?: CacheMark } {
  if (control === null || control === undefined) return {};
  return { cache: control.ttl ? { ttl: control.ttl } : {} };
}

function textPart(text: string, control?: CacheControlBody): ContentPart {
  return { type: "text", text, ...cacheMark(control) };
}

function systemTurns(b: Builder, blocks: SystemBlocks): number {
  let added = 0;
  blocks.forEach((block) => {
    // One message per block: providers join system messages with a blank line, as blocks read.
    if (block.text === "") return;
    b.messages.push({ role: "system", content: [textPart(block.text, block.cache_control)] });
    added++;
  });
  return added;
}

function imagePart(block: Extract<Blocks<"user">[number], { type: "image" }>, at: string): ContentPart {
  const source = block.source;
  const mark = cacheMark(block.cache_control);
  if (source.type === "base64") return { type: "image_url", url: `data:${source.media_type};base64,${source.data}`, ...mark };
  if (!/^https?:\/\//i.test(source.url)) invalid(`${at}.source.url`, "must be an http(s) URL");
  return { type: "image_url", url: source.url, ...mark };
}

function userTurns(b: Builder, blocks: Blocks<"user">, at: string): void {
  let pending: ContentPart[] = [];
  let added = 0;
  const flush = () => {
    if (pending.length === 0) return;
    b.messages.push({ role: "user", content: pending });
    pending = [];
    added++;
  };
  blocks.forEach((block, j) => {
    const blockAt = `${at}.content[${j}]`;
    switch (block.type) {
      case "text":
        if (block.text !== "") pending.push(textPart(block.text, block.cache_control));
        break;
      case "image":
        pending.push(imagePart(block, blockAt));
        break;
      case "tool_result": {
        if (!b.toolUseIds.has(block.tool_use_id)) invalid(`${blockAt}.tool_use_id`, "no tool_use block with this id in an earlier assistant message");
        // Text before a result stays before it: each result is a message of its own.
        flush();
        const parts = (block.content ?? []).filter((p) => p.text !== "").map((p) => textPart(p.text));
        b.messages.push({
          role: "tool",
          toolCallId: block.tool_use_id,
          // An empty result is still a result: providers receive it as empty text.
          content: parts.length > 0 ? parts : [textPart("")],
          ...(block.is_error === true ? { isError: true } : {}),
          // A mark on the result or on its last text block: Anthropic caches up to the result either way.
          ...cacheMark(block.cache_control ?? (block.content ?? []).findLast((p) => p.cache_control)?.cache_control),
        });
        added++;
        break;
      }
    }
  });
  flush();
  if (added === 0) invalid(`${at}.content`, "must not be empty");
}

function assistantTurn(b: Builder, blocks: Blocks<"assistant">, at: string): void {
  let content: ContentPart[] = [];
  let toolCalls: ToolCall[] = [];
  let unsigned = 0;
  blocks.forEach((block, j) => {
    const blockAt = `${at}.content[${j}]`;
    switch (block.type) {
      case "text":
        if (block.text !== "") content.push(textPart(block.text, block.cache_control));
        break;
      case "thinking": {
        const signature = block.signature ?? "";
        if (signature.length > OPTION_LIMITS.maxSignatureChars) invalid(`${blockAt}.signature`, `at most ${OPTION_LIMITS.maxSignatureChars} characters`);
        // Unsigned thinking (resumed Claude Code transcripts carry it) verifies nowhere: dropped, not refused.
        if (signature === "") {
          unsigned++;
          break;
        }
        // The signature is what lets the provider that issued it accept the turn again.
        content.push({ type: "reasoning", text: block.thinking, signature });
        break;
      }
      case "redacted_thinking":
        content.push({ type: "reasoning", text: "", redactedData: block.data });
        break;
      case "tool_use":
        if (!TOOL_NAME.test(block.name)) invalid(`${blockAt}.name`, "must be 1-64 letters, digits, '_' or '-'");
        if (b.toolUseIds.has(block.id)) invalid(`${blockAt}.id`, "a tool_use id must be unique in the conversation");
        b.toolUseIds.add(block.id);
        toolCalls.push({ id: block.id, name: block.name, arguments: JSON.stringify(block.input), ...cacheMark(block.cache_control) });
        break;
      case "mcp_tool_use":
        // A call the gateway ran for this turn: the model's call of `<server>_<tool>`, as the model made it.
        if (b.toolUseIds.has(block.id)) invalid(`${blockAt}.id`, "a tool_use id must be unique in the conversation");
        b.toolUseIds.add(block.id);
        toolCalls.push({ id: block.id, name: `${block.server_name}${NAME_SEPARATOR}${block.name}`, arguments: JSON.stringify(block.input) });
        break;
      case "mcp_tool_result": {
        // Its result: the turn so far, then the result as the model read it, then the rest of the turn.
        if (content.length > 0 || toolCalls.length > 0) b.messages.push({ role: "assistant", content, ...(toolCalls.length > 0 ? { toolCalls } : {}) });
        content = [];
        toolCalls = [];
        const text = typeof block.content === "string" ? block.content : (block.content ?? []).map((part) => part.text).join("\n");
        b.messages.push({ role: "tool", toolCallId: block.tool_use_id, content: [{ type: "text", text }] });
        break;
      }
      default:
        // A server tool's block (server_tool_use, web_search_tool_result, …), in its place in the turn.
        content.push({ type: "hosted_item", origin: "anthropic", item: block });
        break;
    }
  });
  if (content.length === 0 && toolCalls.length === 0) {
    // The turn ended with a gateway-run call's result: everything of it is in already.
    if (blocks.at(-1)?.type === "mcp_tool_result") return;
    // A turn of nothing but unsigned thinking: nothing of it can be replayed, so it is left out.
    if (unsigned > 0) return;
    invalid(`${at}.content`, "must not be empty");
  }
  // Tool calls follow the turn's text and reasoning, where Claude puts them.
  b.messages.push({ role: "assistant", content, ...(toolCalls.length > 0 ? { toolCalls } : {}) });
}

/**
 * `system` and `messages` as canonical messages. They do not line up one to
 * one (system blocks become system messages, each tool_result a tool message
 * of its own), so every per-message rule is checked here, where a problem
 * can be named by the client's path. Images become URLs (base64 as data:
 * URLs, which providers turn back into base64), thinking blocks reasoning
 * parts with their signatures, redacted thinking opaque reasoning, tool_use
 * blocks tool calls with their input as JSON text.
 */
export function canonicalMessages(system: SystemBlocks, messages: readonly AnthropicMessageParam[]): ChatMessage[] {
  const b: Builder = { messages: [], toolUseIds: new Set() };
  systemTurns(b, system);
  messages.forEach((m, i) => {
    const at = `messages[${i}]`;
    switch (m.role) {
      case "user":
        return userTurns(b, m.content, at);
      case "assistant":
        return assistantTurn(b, m.content, at);
      case "system":
        if (systemTurns(b, m.content) === 0) invalid(`${at}.content`, "must not be empty");
        return;
    }
  });
  return b.messages;
}
