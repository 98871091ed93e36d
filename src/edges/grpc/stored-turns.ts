import type { ChatMessage, ChatRequest, ToolCall } from "../../core/chat-request.js";
import { GatewayError } from "../../core/errors.js";
import { isResponseId } from "../../response-state/response-ids.js";
import type { ResponseState } from "../../response-state/response-state.js";
import type { TurnOrigin } from "../../response-state/stored-response.js";

/** The provider (configured name) and model one upstream attempt goes to. */
export interface TurnTarget {
  readonly provider: string;
  readonly model: string;
}

/** A request continued from stored turns, and who issued the signatures in them. */
export interface ContinuedRequest {
  readonly request: ChatRequest;
  readonly origins: readonly TurnOrigin[];
}

const FIELD = "previous_response_id";

/**
 * `previous_response_id` on a gRPC request: the chain's turns (each
 * response's own messages and answer, oldest first) go after the request's
 * system messages and before the rest of its messages. A stored turn has no
 * system messages (they are not inherited, as the HTTP API's `instructions`
 * are not). Unknown, expired, deleted and another key's are one NOT_FOUND,
 * so a key learns nothing of another's responses.
 */
export async function continueFrom(state: ResponseState, id: string, owner: string, request: ChatRequest): Promise<ContinuedRequest> {
  // Checked before any lookup: the id is echoed in the NOT_FOUND below, and only one the gateway could have made is.
  if (!isResponseId(id)) throw new GatewayError("invalid_request", `${FIELD}: not a response id (resp_ and 32 hex digits)`, { field: FIELD });
  const { maxChainDepth } = state.settings();
  const chain = await state.store.chain(id, owner, maxChainDepth);
  if (!chain) {
    // The head is readable, so a link before it is gone or the chain is too long: not the same answer as an unknown id.
    if (await state.store.get(id, owner)) {
      throw new GatewayError("failed_precondition", `${FIELD}: its chain is longer than responses.maxChainDepth (${maxChainDepth}), or a response in it expired or was deleted`, { field: FIELD });
    }
    throw new GatewayError("not_found", `${FIELD}: no stored response ${id} for this key (unknown, expired or deleted)`, { field: FIELD });
  }
  const system = request.messages.filter((m) => m.role === "system");
  const messages: ChatMessage[] = [...system];
  const origins: TurnOrigin[] = [];
  for (const record of chain) {
    if (!record.turn) throw new GatewayError("failed_precondition", `${FIELD}: response ${record.id} has not finished`, { field: FIELD });
    const offset = messages.length;
    messages.push(...record.turn.messages);
    for (const origin of record.turn.origins) origins.push({ ...origin, message: origin.message + offset });
  }
  messages.push(...request.messages.filter((m) => m.role !== "system"));
  return { request: { ...request, messages }, origins };
}

function withoutSignature(call: ToolCall): ToolCall {
  const { signature: _dropped, ...rest } = call;
  return rest;
}

/**
 * The request as one target may receive it: stored reasoning and call
 * signatures another provider or model issued are left out (they verify
 * only where they were issued, and a provider refuses a turn whose
 * signature fails). Per attempt, since failover may pick a target other
 * than the one that answered the stored turn. A message left empty goes.
 */
export function turnsForTarget(request: ChatRequest, origins: readonly TurnOrigin[], target: TurnTarget): ChatRequest {
  const foreign = origins.filter((o) => o.provider !== target.provider || o.model !== target.model);
  if (foreign.length === 0) return request;
  const parts = new Map<number, Set<number>>();
  const calls = new Map<number, Set<number>>();
  for (const o of foreign) {
    const [into, index] = o.part !== undefined ? [parts, o.part] : [calls, o.call];
    if (index === undefined) continue;
    into.set(o.message, (into.get(o.message) ?? new Set<number>()).add(index));
  }
  const messages = request.messages.flatMap((m, i): ChatMessage[] => {
    const dropParts = parts.get(i);
    const dropCalls = calls.get(i);
    if (!dropParts && !dropCalls) return [m];
    const content = dropParts ? m.content.filter((_, j) => !dropParts.has(j)) : m.content;
    const toolCalls = dropCalls ? m.toolCalls?.map((call, j) => (dropCalls.has(j) ? withoutSignature(call) : call)) : m.toolCalls;
    if (content.length === 0 && (toolCalls?.length ?? 0) === 0) return [];
    return [{ ...m, content, ...(toolCalls ? { toolCalls } : {}) }];
  });
  return { ...request, messages };
}
