import type { ChatMessage, ChatRequest, ToolCall } from "./chat-request.js";

/**
 * Who issued a replayed reasoning part (`messages[message].content[part]`)
 * or a call signature (`messages[message].toolCalls[call]`), as its
 * reasoning item's envelope says.
 */
export interface ReplayOrigin {
  readonly message: number;
  readonly part?: number;
  readonly call?: number;
  readonly provider: string;
  readonly model: string;
}

/** The provider (configured name) and model one upstream attempt goes to. */
export interface ReplayTarget {
  readonly provider: string;
  readonly model: string;
}

function withoutSignature(call: ToolCall): ToolCall {
  const { signature: _dropped, ...rest } = call;
  return rest;
}

/** Indices of `origins` per message, for parts or for calls. */
function byMessage(origins: readonly ReplayOrigin[], key: "part" | "call"): Map<number, Set<number>> {
  const out = new Map<number, Set<number>>();
  for (const origin of origins) {
    const index = origin[key];
    if (index === undefined) continue;
    const set = out.get(origin.message) ?? new Set<number>();
    set.add(index);
    out.set(origin.message, set);
  }
  return out;
}

/**
 * Origins indexed in `decoded` (the messages as the edge decoded them)
 * moved to where those messages are in `sent`: a stage may have dropped
 * the oldest turns (truncation) or added a system message. Messages are
 * found by identity, as stages pass on the ones they keep; an origin whose
 * message is gone goes with it.
 */
function followMessages(origins: readonly ReplayOrigin[], decoded: readonly ChatMessage[], sent: readonly ChatMessage[]): readonly ReplayOrigin[] {
  if (decoded === sent || decoded.length === sent.length) return origins;
  const at = new Map(sent.map((m, i) => [m, i]));
  return origins.flatMap((o) => {
    const message = decoded[o.message];
    const i = message === undefined ? undefined : at.get(message);
    return i === undefined ? [] : [{ ...o, message: i }];
  });
}

/**
 * The request as one target may receive it: reasoning and call signatures
 * another provider or model issued are left out, since they verify only
 * where they were issued and a provider refuses a turn whose signature
 * fails (the chat edge's replay store applies the same rule). Meant for the
 * pipeline's per-target `prepare` hook, because failover may pick a target
 * other than the one that answered the earlier turn. A message left with
 * nothing is left out too. `decoded`: the messages `origins` index, when
 * the pipeline may have changed how many there are since.
 */
export function replayForTarget(request: ChatRequest, origins: readonly ReplayOrigin[], target: ReplayTarget, decoded: readonly ChatMessage[] = request.messages): ChatRequest {
  const foreign = followMessages(origins, decoded, request.messages).filter((o) => o.provider !== target.provider || o.model !== target.model);
  if (foreign.length === 0) return request;
  const parts = byMessage(foreign, "part");
  const calls = byMessage(foreign, "call");
  const messages = request.messages.flatMap((m, i): ChatMessage[] => {
    const dropParts = parts.get(i);
    const dropCalls = calls.get(i);
    if (!dropParts && !dropCalls) return [m];
    const content = dropParts ? m.content.filter((_, j) => !dropParts.has(j)) : m.content;
    const toolCalls = dropCalls ? m.toolCalls?.map((call, j) => (dropCalls.has(j) ? withoutSignature(call) : call)) : m.toolCalls;
    if (content.length === 0 && (toolCalls?.length ?? 0) === 0) return [];
    return [{ ...m, content, toolCalls }];
  });
  return { ...request, messages };
}
