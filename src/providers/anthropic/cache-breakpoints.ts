/** Anthropic refuses a request with more `cache_control` breakpoints than this. */
export const MAX_CACHE_BREAKPOINTS = 4;

const EPHEMERAL = { type: "ephemeral" } as const;

type Json = Record<string, unknown>;

const isObject = (value: unknown): value is Json => value !== null && typeof value === "object" && !Array.isArray(value);
const list = (value: unknown): readonly unknown[] => (Array.isArray(value) ? value : []);
const marked = (value: unknown): boolean => isObject(value) && value.cache_control !== undefined && value.cache_control !== null;

/** Where a breakpoint sits: a key path from the body to its block. */
type Path = readonly (string | number)[];

/**
 * Every block of the body that carries a breakpoint, in Anthropic's cache
 * order (tools, system, messages; a tool_result's inner blocks after the
 * result itself): the caller's own (from the Messages edge or provider
 * options) or ours.
 */
function breakpointPaths(body: Json): Path[] {
  const out: Path[] = [];
  const inContent = (content: unknown, at: Path) =>
    list(content).forEach((b, i) => {
      if (marked(b)) out.push([...at, i]);
      if (isObject(b)) list(b.content).forEach((inner, j) => marked(inner) && out.push([...at, i, "content", j]));
    });
  list(body.tools).forEach((t, i) => marked(t) && out.push(["tools", i]));
  inContent(body.system, ["system"]);
  list(body.messages).forEach((m, i) => isObject(m) && inContent(m.content, ["messages", i, "content"]));
  return out;
}

/** `value` with the object at `path` replaced by `change(object)`; every object on the way copied, none touched. */
function updateAt(value: unknown, path: Path, change: (block: Json) => Json): unknown {
  if (path.length === 0) return isObject(value) ? change(value) : value;
  const [key, ...rest] = path;
  if (Array.isArray(value) && typeof key === "number") return value.map((v, i) => (i === key ? updateAt(v, rest, change) : v));
  if (isObject(value) && typeof key === "string") return { ...value, [key]: updateAt(value[key], rest, change) };
  return value;
}

const unmark = (block: Json): Json => {
  const { cache_control: _dropped, ...rest } = block;
  return rest;
};

/**
 * The body within Anthropic's limit of MAX_CACHE_BREAKPOINTS, which it
 * refuses to pass: past it, the earliest marks go and the last four stay
 * (each covers the prefix before it, so the later ones cache the most).
 * The same body when it is within the limit.
 */
export function withinBreakpointLimit(body: Json): Json {
  const paths = breakpointPaths(body);
  let out: unknown = body;
  for (const path of paths.slice(0, Math.max(0, paths.length - MAX_CACHE_BREAKPOINTS))) out = updateAt(out, path, unmark);
  return out as Json;
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
 * the last message, the message the latest answer replied to, the last
 * system block and the last tool, in that order of worth. The caller's own
 * breakpoints come first: ours are added only where none is, while the
 * body holds fewer than MAX_CACHE_BREAKPOINTS (adding one never moves a
 * prefix the caller chose). Prefixes shorter than the model's minimum
 * (1,024 tokens or more) are simply not cached by Anthropic, so they are
 * marked all the same. A new body: the request's own objects are not
 * touched, so a retry builds the same body again.
 */
export function withCacheBreakpoints(input: Json): Json {
  const body = withinBreakpointLimit(input);
  let room = MAX_CACHE_BREAKPOINTS - breakpointPaths(body).length;
  if (room <= 0) return body;
  const out: Json = { ...body };
  const messages = list(body.messages);
  const indexes = markedMessageIndexes(messages).reverse();
  const mark = (content: unknown): unknown[] | undefined => (list(content).some(marked) ? undefined : markedContent(content));
  let markedMessages = messages;
  for (const i of indexes) {
    if (room === 0) break;
    const m = messages[i];
    const content = isObject(m) ? mark(m.content) : undefined;
    if (!content) continue;
    markedMessages = markedMessages.map((old, j) => (j === i ? { ...(m as Json), content } : old));
    room--;
  }
  if (markedMessages !== messages) out.messages = markedMessages;
  if (room > 0 && body.system !== undefined) {
    const system = mark(body.system);
    if (system) {
      out.system = system;
      room--;
    }
  }
  const tools = list(body.tools);
  const lastTool = tools.at(-1);
  if (room > 0 && isObject(lastTool) && !tools.some(marked)) out.tools = [...tools.slice(0, -1), { ...lastTool, cache_control: EPHEMERAL }];
  return out;
}
