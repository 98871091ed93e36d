import { GatewayError } from "../core/errors.js";

/**
 * A replayed tool call's arguments as an object, for providers that take
 * arguments as JSON values rather than text (Anthropic, Gemini).
 */
export function parseToolArguments(text: string, field: string): Record<string, unknown> {
  if (text.trim() === "") return {};
  try {
    const value = JSON.parse(text) as unknown;
    if (value !== null && typeof value === "object" && !Array.isArray(value)) return value as Record<string, unknown>;
  } catch {
    // fall through to the error below
  }
  throw new GatewayError("invalid_request", `${field}: must be a JSON object`, { field });
}

/** Splits a data: URL into its media type and base64 payload; undefined for other URLs. */
export function parseDataUrl(url: string): { mediaType: string; data: string } | undefined {
  const match = /^data:([^;,]+);base64,(.*)$/s.exec(url);
  return match ? { mediaType: match[1]!, data: match[2]! } : undefined;
}
