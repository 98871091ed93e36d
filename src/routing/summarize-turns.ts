import { createHash } from "node:crypto";
import type { ContextSettings } from "../config/settings.js";
import type { ChatMessage, ChatRequest } from "../core/chat-request.js";
import { TOKENS_PER_MESSAGE } from "../usage/prompt-size.js";
import type { CountTokens } from "../usage/token-count.js";
import { fixedTokens, messageTokens, turnsOf } from "./fit-context.js";

/** Writes the summary of `messages` (the summarizer alias, called as the request's key); rejects when it cannot. */
export type Summarize = (messages: readonly ChatMessage[]) => Promise<string>;

/** The longest summary asked for (the summarizer's max_tokens), and the room kept for it. */
export const SUMMARY_MAX_TOKENS = 1_024;
/**
 * Turns are summarised in blocks of this many: the cut point moves only
 * every few turns, so a growing conversation sends the same old turns to
 * be summarised, finds their summary in the cache, and is not summarised
 * again on each new turn.
 */
export const SUMMARY_BLOCK_TURNS = 8;
/** Summaries kept in this process, the least recently used dropped first. */
export const MAX_CACHED_SUMMARIES = 1_000;

export const SUMMARY_HEADING = "Summary of the earlier conversation, written by the gateway to fit the context window:";

/** Summaries by the hash of what they summarised (and whose it was), least recently used out first. */
export interface SummaryCache {
  get(key: string): string | undefined;
  set(key: string, summary: string): void;
}

export function createSummaryCache(max = MAX_CACHED_SUMMARIES): SummaryCache {
  const entries = new Map<string, string>();
  return {
    get(key) {
      const found = entries.get(key);
      if (found !== undefined) {
        entries.delete(key);
        entries.set(key, found);
      }
      return found;
    },
    set(key, summary) {
      entries.delete(key);
      entries.set(key, summary);
      if (entries.size > max) entries.delete(entries.keys().next().value!);
    },
  };
}

/** The cache key of a summary: whose conversation (a key never reads another's summary) and the exact messages summarised. */
export function summaryKey(scope: string, messages: readonly ChatMessage[]): string {
  return createHash("sha256").update(scope).update("\0").update(JSON.stringify(messages)).digest("hex");
}

/**
 * `request` with its oldest turns replaced by one system message holding
 * their summary, so the prompt takes at most `promptBudget` tokens: the
 * fewest whole turns that make room (for the summary too), rounded up to a
 * block of SUMMARY_BLOCK_TURNS, never the system prompt nor the last
 * keepLastTurns turns. Undefined when even that cannot fit; rejects when
 * the summarizer fails (the caller then truncates).
 */
export async function summarizeToFit(
  request: ChatRequest,
  promptBudget: number,
  settings: Pick<ContextSettings, "keepLastTurns">,
  count: CountTokens,
  summarize: Summarize,
  cache: SummaryCache,
  scope: string,
): Promise<{ readonly request: ChatRequest; readonly summarized: number } | undefined> {
  const perMessage = request.messages.map((m) => messageTokens(m, count));
  const total = fixedTokens(request, count) + perMessage.reduce((a, b) => a + b, 0);
  const room = SUMMARY_MAX_TOKENS + TOKENS_PER_MESSAGE + count(SUMMARY_HEADING);
  const { turns } = turnsOf(request.messages);
  const droppable = Math.max(0, turns.length - settings.keepLastTurns);
  let needed = 0;
  let freed = 0;
  while (needed < droppable && total - freed + room > promptBudget) {
    for (const i of turns[needed]!) freed += perMessage[i]!;
    needed++;
  }
  if (total - freed + room > promptBudget) return undefined;
  const summarized = Math.min(droppable, Math.ceil(needed / SUMMARY_BLOCK_TURNS) * SUMMARY_BLOCK_TURNS);
  const freedBy = (n: number) =>
    turns
      .slice(0, n)
      .flat()
      .reduce((sum, i) => sum + perMessage[i]!, 0);
  const dropped = new Set(turns.slice(0, summarized).flat());
  const old = request.messages.filter((_, i) => dropped.has(i));
  const key = summaryKey(scope, old);
  let summary = cache.get(key);
  if (summary === undefined) {
    summary = await summarize(old);
    cache.set(key, summary);
  }
  const note: ChatMessage = { role: "system", content: [{ type: "text", text: `${SUMMARY_HEADING}\n${summary}` }] };
  // A summarizer that wrote more than it was asked for must not push the prompt past the window.
  if (total - freedBy(summarized) + messageTokens(note, count) > promptBudget) throw new Error("the summary is longer than the room kept for it");
  const first = request.messages.findIndex((_, i) => dropped.has(i));
  const messages = request.messages.flatMap((m, i) => (i === first ? [note] : dropped.has(i) ? [] : [m]));
  return { request: { ...request, messages }, summarized };
}
