import { createHash, type Hash } from "node:crypto";
import { MCP_ERRORS, McpError } from "../contract.js";

/** Nesting deeper than this is refused before it is hashed: a stack bomb costs nothing to send. */
export const MAX_ARGUMENT_DEPTH = 64;
/** Canonical text hashed at most (UTF-16 code units, about bytes for ASCII): the digest never walks more than this. */
export const MAX_ARGUMENT_CHARS = 8 * 1024 * 1024;

/**
 * SHA-256 (hex) of a tool call's arguments as canonical JSON: object keys
 * sorted by UTF-16 code units, no whitespace, numbers and strings as
 * JSON.stringify writes them (RFC 8785's rules for what JSON-RPC can
 * carry). The same arguments in any key order give the same digest, so
 * the audit log can show that two calls had the same arguments without
 * keeping them. Written to the hash as it walks, never built whole;
 * refused (`invalidParams`, `tooLarge`) past MAX_ARGUMENT_DEPTH or
 * MAX_ARGUMENT_CHARS, before the rest is read.
 */
export function canonicalArgumentsSha256(args: unknown): string {
  const hash = createHash("sha256");
  const out = { hash, chars: 0 };
  write(out, args, 0);
  return hash.digest("hex");
}

interface Sink {
  readonly hash: Hash;
  chars: number;
}

function emit(out: Sink, text: string): void {
  out.chars += text.length;
  if (out.chars > MAX_ARGUMENT_CHARS) throw new McpError(MCP_ERRORS.tooLarge, `tool arguments are larger than ${MAX_ARGUMENT_CHARS} characters`);
  out.hash.update(text);
}

function write(out: Sink, value: unknown, depth: number): void {
  if (depth > MAX_ARGUMENT_DEPTH) throw new McpError(MCP_ERRORS.invalidParams, `tool arguments nest deeper than ${MAX_ARGUMENT_DEPTH} levels`);
  if (value === null || typeof value === "boolean" || typeof value === "string") return emit(out, JSON.stringify(value));
  // Not finite: null, as JSON.stringify writes it; a value JSON has no word for (a function, a symbol) too.
  if (typeof value === "number") return emit(out, Number.isFinite(value) ? JSON.stringify(value) : "null");
  if (typeof value === "bigint") return emit(out, value.toString());
  if (Array.isArray(value)) {
    emit(out, "[");
    for (let i = 0; i < value.length; i++) {
      if (i > 0) emit(out, ",");
      const item: unknown = value[i];
      write(out, item === undefined || typeof item === "function" || typeof item === "symbol" ? null : item, depth + 1);
    }
    return emit(out, "]");
  }
  if (typeof value === "object") {
    emit(out, "{");
    let first = true;
    for (const key of Object.keys(value).sort()) {
      const item: unknown = (value as Record<string, unknown>)[key];
      if (item === undefined || typeof item === "function" || typeof item === "symbol") continue;
      if (!first) emit(out, ",");
      first = false;
      emit(out, JSON.stringify(key));
      emit(out, ":");
      write(out, item, depth + 1);
    }
    return emit(out, "}");
  }
  emit(out, "null");
}
