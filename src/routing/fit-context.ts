import type { ContextSettings } from "../config/settings.js";
import type { ChatMessage, ChatRequest } from "../core/chat-request.js";
import { IMAGE_TOKENS, TOKENS_PER_MESSAGE, TOKENS_PER_REQUEST } from "../usage/prompt-size.js";
import type { CountTokens } from "../usage/token-count.js";

/** One message's tokens by the gateway's tokenizer, framing and images included (the same rule as usage/prompt-size.ts). */
export function messageTokens(message: ChatMessage, count: CountTokens): number {
  let tokens = TOKENS_PER_MESSAGE;
  for (const part of message.content) tokens += part.type === "image_url" ? IMAGE_TOKENS : part.type === "hosted_item" ? count(JSON.stringify(part.item)) : count(part.text);
  for (const call of message.toolCalls ?? []) tokens += count(call.name) + count(call.arguments);
  return tokens;
}

/** What the request costs besides its messages: framing and tool definitions. */
export function fixedTokens(request: ChatRequest, count: CountTokens): number {
  let tokens = TOKENS_PER_REQUEST;
  for (const tool of request.tools) tokens += count(tool.name) + count(tool.description) + count(JSON.stringify(tool.parameters));
  return tokens;
}

/**
 * The conversation in turns: a turn opens with a user message and holds
 * what follows it up to the next user message (the answer, tool calls and
 * their results), so dropping whole turns never leaves a tool result
 * without its call. System messages stand apart; anything before the first
 * user message belongs to the first turn.
 */
export function turnsOf(messages: readonly ChatMessage[]): { readonly system: number[]; readonly turns: number[][] } {
  const system: number[] = [];
  const turns: number[][] = [];
  messages.forEach((message, i) => {
    if (message.role === "system") system.push(i);
    else if (message.role === "user" || turns.length === 0) turns.push([i]);
    else turns.at(-1)!.push(i);
  });
  return { system, turns };
}

/**
 * `request` with its oldest turns dropped until its prompt takes at most
 * `promptBudget` tokens, never the system prompt (with keepSystem) nor the
 * last keepLastTurns turns; undefined when even that is too long. Counts
 * each message once.
 */
export function truncateToFit(request: ChatRequest, promptBudget: number, settings: Pick<ContextSettings, "keepSystem" | "keepLastTurns">, count: CountTokens): { readonly request: ChatRequest; readonly dropped: number } | undefined {
  const perMessage = request.messages.map((m) => messageTokens(m, count));
  let total = fixedTokens(request, count) + perMessage.reduce((a, b) => a + b, 0);
  if (total <= promptBudget) return { request, dropped: 0 };
  const { system, turns } = turnsOf(request.messages);
  const dropped = new Set<number>();
  let droppedTurns = 0;
  if (!settings.keepSystem) {
    for (const i of system) {
      if (total <= promptBudget) break;
      dropped.add(i);
      total -= perMessage[i]!;
    }
  }
  for (const turn of turns.slice(0, Math.max(0, turns.length - settings.keepLastTurns))) {
    if (total <= promptBudget) break;
    for (const i of turn) {
      dropped.add(i);
      total -= perMessage[i]!;
    }
    droppedTurns++;
  }
  if (total > promptBudget) return undefined;
  return { request: { ...request, messages: request.messages.filter((_, i) => !dropped.has(i)) }, dropped: droppedTurns };
}

/**
 * Each tool result longer than `maxTokens` cut to its head and tail, the
 * middle replaced by a marker saying how much was elided: retrieval
 * results are long, and their ends usually carry what matters. Cut by
 * characters in proportion to tokens, so the result is about `maxTokens`.
 */
export function capToolResults(request: ChatRequest, maxTokens: number, count: CountTokens): { readonly request: ChatRequest; readonly capped: number } {
  let capped = 0;
  const messages = request.messages.map((message): ChatMessage => {
    if (message.role !== "tool") return message;
    let changed = false;
    const content = message.content.map((part) => {
      if (part.type !== "text" || Buffer.byteLength(part.text, "utf8") <= maxTokens) return part;
      const tokens = count(part.text);
      if (tokens <= maxTokens) return part;
      const keep = Math.floor((part.text.length * maxTokens) / tokens / 2);
      changed = true;
      return { ...part, text: `${part.text.slice(0, keep)}\n[… about ${tokens - maxTokens} tokens elided by the gateway …]\n${part.text.slice(part.text.length - keep)}` };
    });
    if (!changed) return message;
    capped++;
    return { ...message, content };
  });
  return capped === 0 ? { request, capped } : { request: { ...request, messages }, capped };
}
