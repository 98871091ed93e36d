import type { MessageSource } from "./input-items.js";

/** What follows a canonical content part's path, as the part or item it came from names it. */
function partTail(tail: string): string {
  if (tail === ".image_url.url") return ".image_url";
  if (tail.startsWith(".reasoning.signature")) return ".encrypted_content";
  return "";
}

function callTail(tail: string): string {
  if (tail === ".id") return ".call_id";
  if (tail === ".name") return ".name";
  return "";
}

/**
 * A canonical `messages[…]` path (from validation, or from a provider's
 * request builder during the call) as the input item the caller sent:
 * `messages[2].content[1].image_url.url` → `input[4].content[1].image_url`.
 * Undefined for any other path.
 */
export function inputParam(field: string, sources: readonly MessageSource[]): string | undefined {
  if (field === "messages") return "input";
  const message = /^messages\[(\d+)\](.*)$/.exec(field);
  if (!message) return undefined;
  const source = sources[Number(message[1])];
  if (!source) return undefined;
  const rest = message[2]!;
  if (rest === ".content") return source.content;
  if (rest === ".tool_call_id") return `${source.path}.call_id`;
  const part = /^\.content\[(\d+)\](.*)$/.exec(rest);
  if (part) {
    const at = source.parts[Number(part[1])];
    return at === undefined ? source.content : at + partTail(part[2]!);
  }
  const call = /^\.tool_calls\[(\d+)\](.*)$/.exec(rest);
  if (call) {
    const at = source.calls[Number(call[1])];
    return at === undefined ? source.path : at + callTail(call[2]!);
  }
  return source.path;
}
