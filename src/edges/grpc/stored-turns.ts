import type { ChatMessage, ChatRequest } from "../../core/chat-request.js";
import { GatewayError } from "../../core/errors.js";
import { isResponseId } from "../../response-state/response-ids.js";
import type { ResponseState } from "../../response-state/response-state.js";
import type { TurnOrigin } from "../../response-state/stored-response.js";

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
