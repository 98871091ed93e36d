/** Anthropic refuses a request with more `cache_control` breakpoints than this. */
export const MAX_CACHE_BREAKPOINTS = 4;

const EPHEMERAL = { type: "ephemeral" } as const;

type Json = Record<string, unknown>;

const isObject = (value: unknown): value is Json => value !== null && typeof value === "object" && !Array.isArray(value);
const list = (value: unknown): readonly unknown[] => (Array.isArray(value) ? value : []);
const marked = (value: unknown): boolean => isObject(value) && value.cache_control !== undefined && value.cache_control !== null;

/**
 * Whether the body already has breakpoints of its own (only provider
 * options can put them there). Those stand as they are: adding ours could
 * pass the limit or move a prefix the caller chose on purpose.
 */
function hasBreakpoints(body: Json): boolean {
  const inContent = (content: unknown) => list(content).some((b) => marked(b) || (isObject(b) && list(b.content).some(marked)));
  return (
    marked(body) ||
    list(body.tools).some(marked) ||
    inContent(body.system) ||
    list(body.messages).some((m) => isObject(m) && inContent(m.content))
  );
}

/** Anthropic takes no breakpoint on thinking blocks (they are cached with their turn) nor on empty text. */
function cacheable(block: unknown): boolean {
  if (!isObject(block) || block.type === "thinking" || block.type === "redacted_thinking") return false;
  return !(block.type === "text" && block.text === "");
}

/** `content` (a string or blocks) as blocks with a breakpoint on the last one that can take it; undefined when none can. */
function markedContent(content: unknown): unknown[] | undefined {
  const blocks: unknown[] = typeof content === "string" ? [{ type: "text", text: content }] : [...list(content)];
  const at = blocks.findLastIndex(cacheable);
  if (at < 0) return undefined;
  blocks[at] = { ...(blocks[at] as Json), cache_control: EPHEMERAL };
  return blocks;
}

/**
 * The messages that get a breakpoint: the last one, which the next turn of
 * the conversation will repeat, and the one the latest answer replied to
 * (before the last assistant turn), where the previous request of this
 * conversation put its own last breakpoint. Marking that exact point finds
 * the cached conversation even when the new tail (the answer, many tool
 * results, the new question) is longer than the 20 blocks Anthropic looks
 * back from a breakpoint for an earlier cache entry.
 */
function markedMessageIndexes(messages: readonly unknown[]): number[] {
  const last = messages.length - 1;
  if (last < 0) return [];
  const answer = messages.findLastIndex((m, i) => i < last && isObject(m) && m.role === "assistant");
  return answer >= 1 ? [answer - 1, last] : [last];
}

/**
 * `promptCache: auto`: `cache_control` breakpoints on the stable prefix of
 * a Messages body, in Anthropic's cache order (tools, system, messages):
 * the last tool, the last system block, the message the latest answer
 * replied to, and the last message. One per place, so never more than
 * MAX_CACHE_BREAKPOINTS. Prefixes shorter than the model's minimum (1,024
 * tokens or more) are simply not cached by Anthropic, so they are marked
 * all the same. A new body: the request's own objects are not touched, so
 * a retry builds the same body again.
 */
export function withCacheBreakpoints(body: Json): Json {
  if (hasBreakpoints(body)) return body;
  const out: Json = { ...body };
  const tools = list(body.tools);
  const lastTool = tools.at(-1);
  if (isObject(lastTool)) out.tools = [...tools.slice(0, -1), { ...lastTool, cache_control: EPHEMERAL }];
  if (body.system !== undefined) {
    const system = markedContent(body.system);
    if (system) out.system = system;
  }
  const messages = list(body.messages);
  const indexes = markedMessageIndexes(messages);
  if (indexes.length > 0) {
    out.messages = messages.map((m, i) => {
      if (!indexes.includes(i) || !isObject(m)) return m;
      const content = markedContent(m.content);
      return content ? { ...m, content } : m;
    });
  }
  return out;
}
