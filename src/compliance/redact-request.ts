import { createHash } from "node:crypto";
import type { ChatMessage, ChatRequest, ContentPart, ToolCall } from "../core/chat-request.js";
import { createPiiVault, type PiiVault } from "./pii-vault.js";
import type { RequestPolicy } from "./pii-policy.js";

/** A request with its personal data replaced by placeholders, and the vault that puts them back. */
export interface RedactedRequest {
  readonly request: ChatRequest;
  readonly vault: PiiVault;
}

/**
 * Every text of `request` a provider would read (system prompt, turns,
 * tool results, the arguments of tool calls sent back) with what the
 * policy's detectors find replaced by `<KIND_N>` placeholders. Reasoning
 * parts are left as they are: providers verify their signatures against
 * the exact text. The same vault serves the answer (restoring-sink.ts).
 */
export function redactRequest(request: ChatRequest, policy: RequestPolicy): RedactedRequest {
  const vault = createPiiVault(policy.custom);
  const redact = (text: string) => vault.redact(text, policy.kinds);
  const messages = request.messages.map((message): ChatMessage => {
    let changed = false;
    const content = message.content.map((part): ContentPart => {
      if (part.type !== "text") return part;
      const text = redact(part.text);
      if (text === part.text) return part;
      changed = true;
      return { ...part, text };
    });
    const toolCalls = message.toolCalls?.map((call): ToolCall => {
      const args = redactArguments(call.arguments, redact);
      if (args === call.arguments) return call;
      changed = true;
      return { ...call, arguments: args };
    });
    return changed ? { ...message, content, ...(toolCalls ? { toolCalls } : {}) } : message;
  });
  return { request: vault.size === 0 ? request : { ...request, messages }, vault };
}

/**
 * Tool-call arguments are JSON: string values are redacted in place, and a
 * number that is itself personal data (a phone number written as a number)
 * becomes its placeholder string, so the text stays JSON. Arguments that
 * do not parse are redacted as text.
 */
export function redactArguments(args: string, redact: (text: string) => string): string {
  let parsed: unknown;
  try {
    parsed = JSON.parse(args);
  } catch {
    return redact(args);
  }
  let changed = false;
  const walk = (value: unknown): unknown => {
    if (typeof value === "string") {
      const out = redact(value);
      if (out !== value) changed = true;
      return out;
    }
    if (typeof value === "number") {
      const text = String(value);
      const out = redact(text);
      if (out === text) return value;
      changed = true;
      return out;
    }
    if (Array.isArray(value)) return value.map(walk);
    if (value !== null && typeof value === "object") return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, walk(v)]));
    return value;
  };
  const out = walk(parsed);
  return changed ? JSON.stringify(out) : args;
}

/**
 * What the response cache keys a redacted request by: the placeholders'
 * text, plus a digest of the values behind them, so two requests that
 * differ only in the personal data they hold never share an entry (the
 * answer was written for one person's data), and the values themselves
 * never appear in a key.
 */
export function cacheViewOf(redacted: RedactedRequest): ChatRequest {
  if (redacted.vault.size === 0) return redacted.request;
  const digest = createHash("sha256").update(redacted.vault.fingerprint()).digest("hex");
  return { ...redacted.request, piiDigest: digest } as ChatRequest;
}
