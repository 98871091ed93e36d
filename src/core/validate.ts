import type { ChatRequest } from "./chat-request.js";
import { holdsUnsafeText, quoteClientValue, UNSAFE_TEXT_WORDS } from "./client-text.js";
import { GatewayError } from "./errors.js";
import { validateOptions } from "./validate-options.js";

/** Tool names every provider accepts; edges that see a tool name before the canonical request exists check it with this. */
export const TOOL_NAME = /^[A-Za-z0-9_-]{1,64}$/;
const MAX_MESSAGES = 10_000;
const MAX_TOOLS = 128;
const MAX_LABELS = 32;

function invalid(field: string, problem: string): never {
  throw new GatewayError("invalid_request", `${field}: ${problem}`, { field });
}

/** Default nesting allowed in a tool's JSON Schema; `limits.maxJsonDepth`. */
export const DEFAULT_MAX_JSON_DEPTH = 32;

/** Whether a JSON value nests objects and arrays deeper than `max`. Iterative: depth cannot overflow the stack. */
export function nestsDeeperThan(value: unknown, max: number): boolean {
  const stack: Array<[unknown, number]> = [[value, 1]];
  while (stack.length > 0) {
    const [item, depth] = stack.pop()!;
    if (item === null || typeof item !== "object") continue;
    if (depth > max) return true;
    for (const child of Array.isArray(item) ? item : Object.values(item)) {
      if (child !== null && typeof child === "object") stack.push([child, depth + 1]);
    }
  }
  return false;
}

/**
 * Semantic checks shared by every edge, on the canonical request. Edges do
 * the structural part (types, required fields of their wire format); this
 * does what must hold whatever the wire: ranges, references, limits. Field
 * paths use the protobuf field names.
 */
export function validateChatRequest(request: ChatRequest, maxJsonDepth = DEFAULT_MAX_JSON_DEPTH): ChatRequest {
  if (request.model.trim() === "") invalid("model", "must name a model alias");
  if (request.messages.length === 0) invalid("messages", "must contain at least one message");
  if (request.messages.length > MAX_MESSAGES) invalid("messages", `at most ${MAX_MESSAGES} messages`);

  request.messages.forEach((m, i) => {
    const at = `messages[${i}]`;
    const calls = m.toolCalls ?? [];
    if (m.content.length === 0 && calls.length === 0) invalid(`${at}.content`, "must not be empty");
    if (m.role === "tool" && !m.toolCallId) invalid(`${at}.tool_call_id`, "is required for tool messages");
    if (m.role !== "assistant" && calls.length > 0) invalid(`${at}.tool_calls`, "only assistant messages carry tool calls");
    if (m.role !== "tool" && m.isError !== undefined) invalid(`${at}.is_error`, "only tool messages report errors");
    m.content.forEach((part, j) => {
      if (part.type === "image_url" && !/^(https?:|data:)/i.test(part.url)) {
        invalid(`${at}.content[${j}].image_url.url`, "must be an http(s) or data: URL");
      }
    });
    calls.forEach((call, j) => {
      if (!call.id) invalid(`${at}.tool_calls[${j}].id`, "must not be empty");
      if (!TOOL_NAME.test(call.name)) invalid(`${at}.tool_calls[${j}].name`, "must be 1-64 letters, digits, '_' or '-'");
    });
  });

  if (request.tools.length > MAX_TOOLS) invalid("tools", `at most ${MAX_TOOLS} tools`);
  const names = new Set<string>();
  request.tools.forEach((tool, i) => {
    if (!TOOL_NAME.test(tool.name)) invalid(`tools[${i}].name`, "must be 1-64 letters, digits, '_' or '-'");
    if (names.has(tool.name)) invalid(`tools[${i}].name`, `duplicate tool name ${quoteClientValue(tool.name)}`);
    names.add(tool.name);
    if (nestsDeeperThan(tool.parameters, maxJsonDepth)) invalid(`tools[${i}].parameters`, `JSON Schema nested deeper than ${maxJsonDepth} levels`);
  });
  const choice = request.toolChoice;
  if (choice?.type === "function" && !names.has(choice.name)) {
    invalid("tool_choice.function_name", `no tool named ${quoteClientValue(choice.name)} in tools`);
  }
  if (choice?.type === "required" && request.tools.length === 0) invalid("tool_choice", "requires at least one tool");

  const s = request.sampling;
  if (s.temperature !== undefined && !(s.temperature >= 0 && s.temperature <= 2)) invalid("sampling.temperature", "must be between 0 and 2");
  if (s.topP !== undefined && !(s.topP > 0 && s.topP <= 1)) invalid("sampling.top_p", "must be greater than 0 and at most 1");
  if (s.topK !== undefined && !(Number.isInteger(s.topK) && s.topK >= 1)) invalid("sampling.top_k", "must be a whole number of at least 1");
  if (s.maxTokens !== undefined && s.maxTokens < 1) invalid("sampling.max_tokens", "must be at least 1");
  if (s.stop.length > 4) invalid("sampling.stop", "at most 4 stop sequences");
  if (s.stop.some((x) => x === "")) invalid("sampling.stop", "stop sequences must not be empty");

  const labels = Object.entries(request.metadata.labels);
  if (labels.length > MAX_LABELS) invalid("metadata.labels", `at most ${MAX_LABELS} labels`);
  for (const [key, value] of labels) {
    if (key.length === 0 || key.length > 64) invalid("metadata.labels", "keys must be 1-64 characters");
    // Labels are the request's tags: what the ledger and the spend reports keep.
    if (holdsUnsafeText(key) || holdsUnsafeText(value)) invalid("metadata.labels", `tag ${quoteClientValue(key)} holds ${UNSAFE_TEXT_WORDS}, which tags may not`);
  }
  validateOptions(request, (value) => nestsDeeperThan(value, maxJsonDepth));
  return request;
}
