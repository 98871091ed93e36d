import type { ChatMessage, ContentPart, ToolCall } from "../../core/chat-request.js";
import { GatewayError } from "../../core/errors.js";
import { TOOL_NAME } from "../../core/validate.js";
import { OPTION_LIMITS } from "../../core/validate-options.js";
import type { AnthropicMessageParam, SystemBlocks } from "./anthropic-schema.js";

type Blocks<R extends AnthropicMessageParam["role"]> = Extract<AnthropicMessageParam, { role: R }>["content"];

function invalid(field: string, problem: string): never {
  throw new GatewayError("invalid_request", `${field}: ${problem}`, { field });
}

/** Turns are built in order, tool_use ids remembered so each tool_result can be checked against an earlier call. */
interface Builder {
  readonly messages: ChatMessage[];
  readonly toolUseIds: Set<string>;
}

function textPart(text: string): ContentPart {
  return { type: "text", text };
}

function systemTurns(b: Builder, blocks: SystemBlocks): number {
  let added = 0;
  blocks.forEach((block) => {
    // One message per block: providers join system messages with a blank line, as blocks read.
    if (block.text === "") return;
    b.messages.push({ role: "system", content: [textPart(block.text)] });
    added++;
  });
  return added;
}

function imagePart(source: Extract<Blocks<"user">[number], { type: "image" }>["source"], at: string): ContentPart {
  if (source.type === "base64") return { type: "image_url", url: `data:${source.media_type};base64,${source.data}` };
  if (!/^https?:\/\//i.test(source.url)) invalid(`${at}.source.url`, "must be an http(s) URL");
  return { type: "image_url", url: source.url };
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
        if (block.text !== "") pending.push(textPart(block.text));
        break;
      case "image":
        pending.push(imagePart(block.source, blockAt));
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
  const content: ContentPart[] = [];
  const toolCalls: ToolCall[] = [];
  blocks.forEach((block, j) => {
    const blockAt = `${at}.content[${j}]`;
    switch (block.type) {
      case "text":
        if (block.text !== "") content.push(textPart(block.text));
        break;
      case "thinking":
        if (block.signature.length > OPTION_LIMITS.maxSignatureChars) invalid(`${blockAt}.signature`, `at most ${OPTION_LIMITS.maxSignatureChars} characters`);
        if (block.thinking === "" && block.signature === "") break;
        // The signature is what lets the provider that issued it accept the turn again.
        content.push({ type: "reasoning", text: block.thinking, ...(block.signature === "" ? {} : { signature: block.signature }) });
        break;
      case "redacted_thinking":
        content.push({ type: "reasoning", text: "", redactedData: block.data });
        break;
      case "tool_use":
        if (!TOOL_NAME.test(block.name)) invalid(`${blockAt}.name`, "must be 1-64 letters, digits, '_' or '-'");
        if (b.toolUseIds.has(block.id)) invalid(`${blockAt}.id`, "a tool_use id must be unique in the conversation");
        b.toolUseIds.add(block.id);
        toolCalls.push({ id: block.id, name: block.name, arguments: JSON.stringify(block.input) });
        break;
      default:
        // A server tool's block (server_tool_use, web_search_tool_result, …), in its place in the turn.
        content.push({ type: "hosted_item", origin: "anthropic", item: block });
        break;
    }
  });
  if (content.length === 0 && toolCalls.length === 0) invalid(`${at}.content`, "must not be empty");
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
