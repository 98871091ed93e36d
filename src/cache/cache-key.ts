import { hash } from "node:crypto";
import type { ChatRequest } from "../core/chat-request.js";

/**
 * JSON with object keys in sorted order and undefined members left out: one
 * text per value, however its producer ordered or spelled its fields.
 */
export function canonicalJson(value: unknown): string {
  if (value === null || typeof value !== "object") return JSON.stringify(value) ?? "null";
  if (Array.isArray(value)) return `[${value.map((item) => (item === undefined ? "null" : canonicalJson(item))).join(",")}]`;
  const entries = Object.keys(value)
    .sort()
    .filter((key) => (value as Record<string, unknown>)[key] !== undefined)
    .map((key) => `${JSON.stringify(key)}:${canonicalJson((value as Record<string, unknown>)[key])}`);
  return `{${entries.join(",")}}`;
}

/** Where an entry is stored, and the secret its value is sealed with (sealed-entry.ts). */
export interface EntryKeys {
  readonly id: string;
  readonly secret: Buffer;
}

/**
 * The exact-cache keys of a request: two SHA-256s over everything that
 * shapes the answer (alias, every message and tool result, tools and tool
 * choice, response format, reasoning controls, every generation parameter,
 * log probabilities, provider options) and the scope the entry belongs to,
 * one naming the entry, one sealing it. Built from the canonical request,
 * so the edge it came through, JSON key order and whitespace do not change
 * them; the caller's metadata (labels, user id) does not shape the answer
 * and is left out.
 */
export function exactCacheKeys(request: ChatRequest, scope: string): EntryKeys {
  const { metadata: _metadata, ...shaping } = request;
  const text = canonicalJson(shaping);
  // One-shot hashes of the joined text: the same digests as a Hash fed in parts, without a Hash object each (a hit computes both).
  const tail = `\0${scope}\0${text}`;
  return { id: hash("sha256", `id${tail}`, "hex"), secret: hash("sha256", `seal${tail}`, "buffer") };
}
