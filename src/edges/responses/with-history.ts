import type { StoredTurn } from "../../response-state/stored-response.js";
import type { DecodedInput, MessageSource } from "./input-items.js";

/** Where a message of an earlier, stored turn came from: the request named it only by `previous_response_id`. */
const FROM_CHAIN: MessageSource = { path: "previous_response_id", content: "previous_response_id", parts: [], calls: [] };

/**
 * The turns of a `previous_response_id` chain (oldest first, each its own
 * input and output) joined into one conversation, their origins offset to
 * the message positions they take in it.
 */
export function chainTurns(turns: readonly StoredTurn[]): StoredTurn {
  if (turns.length === 1) return turns[0]!;
  const messages: StoredTurn["messages"][number][] = [];
  const origins: StoredTurn["origins"][number][] = [];
  for (const turn of turns) {
    const offset = messages.length;
    messages.push(...turn.messages);
    for (const o of turn.origins) origins.push({ ...o, message: o.message + offset });
  }
  return { messages, origins };
}

/**
 * This request's decoded input after the stored conversation it continues:
 * the request's own `instructions` (its first message when it has them)
 * stay at the head, since instructions are not inherited; the history
 * comes next, then the request's own items. Origins and sources follow
 * their messages.
 */
export function withHistory(own: DecodedInput, history: StoredTurn | undefined, hasInstructions: boolean): DecodedInput {
  if (history === undefined || history.messages.length === 0) return own;
  const head = hasInstructions ? 1 : 0;
  const shift = history.messages.length;
  return {
    messages: [...own.messages.slice(0, head), ...history.messages, ...own.messages.slice(head)],
    sources: [...own.sources.slice(0, head), ...history.messages.map(() => FROM_CHAIN), ...own.sources.slice(head)],
    origins: [...history.origins.map((o) => ({ ...o, message: o.message + head })), ...own.origins.map((o) => (o.message >= head ? { ...o, message: o.message + shift } : o))],
  };
}
