import type { PromptBlock } from "./prompt-cache.js";
import { countWords } from "./text.js";

/** The texts of a content value (a string or blocks), tool results' included: what the simulator counts as input. */
export function blockTexts(content: unknown): string[] {
  if (typeof content === "string") return [content];
  if (!Array.isArray(content)) return [];
  return (content as Array<{ type?: unknown; text?: unknown; content?: unknown }>).flatMap((b) => (b.type === "text" && typeof b.text === "string" ? [b.text] : b.type === "tool_result" ? blockTexts(b.content) : []));
}

interface CacheControl {
  type?: unknown;
  ttl?: unknown;
}

const MINUTES = 60_000;

/** A block's breakpoint TTL: Anthropic's default 5 minutes, or the 1 hour it also offers. */
function ttlOf(control: CacheControl | null | undefined): number | undefined {
  if (control === null || typeof control !== "object" || control.type !== "ephemeral") return undefined;
  return control.ttl === "1h" ? 60 * MINUTES : 5 * MINUTES;
}

/** A block without its cache markers (its nested tool-result blocks' too): a marker does not change the prefix. */
function unmarked(block: unknown): unknown {
  if (block === null || typeof block !== "object" || Array.isArray(block)) return block;
  const { cache_control: _, ...rest } = block as Record<string, unknown>;
  return Array.isArray(rest.content) ? { ...rest, content: rest.content.map(unmarked) } : rest;
}

function asBlocks(content: unknown): unknown[] {
  return typeof content === "string" ? [{ type: "text", text: content }] : Array.isArray(content) ? content : [];
}

/** The TTL of a block's breakpoint: its own marker's, or (a tool result) one of its text blocks'. */
function breakpointTtl(block: unknown): number | undefined {
  if (block === null || typeof block !== "object") return undefined;
  const b = block as { cache_control?: CacheControl; content?: unknown };
  const nested = Array.isArray(b.content) ? b.content.map(breakpointTtl).find((ttl) => ttl !== undefined) : undefined;
  return ttlOf(b.cache_control) ?? nested;
}

function promptBlock(where: unknown, block: unknown, tokens: number): PromptBlock {
  const ttl = breakpointTtl(block);
  return { key: JSON.stringify([where, unmarked(block)]), tokens, ...(ttl === undefined ? {} : { breakpointTtlMs: ttl }) };
}

/** Anthropic's limit of breakpoints in one request. */
const MAX_BREAKPOINTS = 4;

/**
 * The request's cache breakpoints, held to Anthropic's rules with its
 * errors: at most four, none on an empty text block, none on a thinking
 * block (which is cached with its turn, never marked).
 */
export function countBreakpoints(body: { system?: unknown; messages?: unknown; tools?: unknown }): number {
  let found = 0;
  const visit = (block: unknown, path: string) => {
    if (block === null || typeof block !== "object") return;
    const b = block as { type?: unknown; text?: unknown; cache_control?: CacheControl | null; content?: unknown };
    if (Array.isArray(b.content)) b.content.forEach((inner, i) => visit(inner, `${path}.content.${i}`));
    if (b.cache_control === undefined || b.cache_control === null) return;
    found++;
    if (b.type === "thinking" || b.type === "redacted_thinking") throw new Error(`${path}.${b.type}.cache_control: Extra inputs are not permitted`);
    if (b.type === "text" && b.text === "") throw new Error(`${path}.text: cache_control cannot be set for empty text blocks`);
  };
  if (Array.isArray(body.tools)) body.tools.forEach((t, i) => visit(t, `tools.${i}`));
  if (Array.isArray(body.system)) body.system.forEach((b, i) => visit(b, `system.${i}`));
  if (Array.isArray(body.messages)) {
    (body.messages as Array<{ content?: unknown }>).forEach((m, i) => {
      if (Array.isArray(m.content)) m.content.forEach((b, j) => visit(b, `messages.${i}.content.${j}`));
    });
  }
  if (found > MAX_BREAKPOINTS) throw new Error(`A maximum of ${MAX_BREAKPOINTS} blocks with cache_control may be provided. Found ${found}.`);
  return found;
}

/**
 * A Messages body as Anthropic's prompt cache reads it: tools, then system
 * blocks, then each message's blocks, each with its input tokens (the
 * simulator's word count, so the blocks add up to the request's input) and
 * its breakpoint. A message block's position names its role and message,
 * and tool_choice and thinking, which (as Anthropic documents) invalidate
 * cached messages but not cached tools and system. (Automatic caching, a
 * breakpoint on the body itself, is not simulated.)
 */
export function anthropicPromptBlocks(body: { system?: unknown; messages?: unknown; tools?: unknown; tool_choice?: unknown; thinking?: unknown }): PromptBlock[] {
  const tools = Array.isArray(body.tools) ? (body.tools as unknown[]) : [];
  const messages = Array.isArray(body.messages) ? (body.messages as Array<{ role?: unknown; content?: unknown }>) : [];
  const settings = { tool_choice: body.tool_choice, thinking: body.thinking };
  return [
    ...tools.map((tool) => promptBlock("tool", tool, 0)),
    ...asBlocks(body.system).map((b) => promptBlock("system", b, countWords(blockTexts([b])))),
    ...messages.flatMap((m, i) => asBlocks(m.content).map((b) => promptBlock({ message: i, role: m.role, ...settings }, b, countWords(blockTexts([b]))))),
  ];
}
