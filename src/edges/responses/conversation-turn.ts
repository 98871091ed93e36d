import { GatewayError, toGatewayError } from "../../core/errors.js";
import type { JsonObject } from "../../response-state/response-ids.js";
import { isConversationId } from "../../response-state/response-ids.js";
import type { ResponseState } from "../../response-state/response-state.js";
import type { Principal } from "../../tenancy/principal.js";
import type { SseCodec } from "../sse/write-sse.js";
import { conversationNotFound, keepLimits } from "./conversations-route.js";
import type { ResponsesRequest } from "./from-responses.js";
import type { ResponseObject } from "./response-object.js";
import { toResponsesError } from "./responses-errors.js";

/** A response in a conversation: the request joined to the conversation's items, and what its end appends. */
export interface ConversationTurn {
  /** The request with the conversation's items before its own input. */
  readonly parsed: ResponsesRequest;
  /** Appends the request's input items and the response's output items; before the client is told the response is over. */
  end(response: ResponseObject): Promise<void>;
  /**
   * `codec` holding back the terminal event (`response.completed`) until
   * `beforeEnd` has appended the turn: a client may send its next turn the
   * moment it sees that event, and the next turn must find this one.
   */
  sse(codec: SseCodec, response: () => ResponseObject): SseCodec & { readonly beforeEnd: () => Promise<void> };
}

/** The API's 404 for `conversation` naming none of the caller's. */
function notFound(id: string): GatewayError {
  const e = conversationNotFound(id);
  return new GatewayError(e.code, e.message, { field: "conversation" });
}

/**
 * The turn of a request with `conversation` (undefined without one): its
 * items read for the caller's key (another key's conversation is the same
 * 404 as an unknown one), then the request decoded again after them.
 */
export async function conversationTurn(parsed: ResponsesRequest, principal: Principal | undefined, state: ResponseState | undefined): Promise<ConversationTurn | undefined> {
  const asked = parsed.conversation;
  if (!asked) return undefined;
  const store = state?.conversations;
  if (!state || !store) {
    throw new GatewayError("invalid_request", "conversation: this gateway keeps no conversations (responses.store is false): send the whole conversation in input", {
      field: "conversation",
    });
  }
  const owner = principal?.id ?? "";
  const prior = isConversationId(asked.id) ? await store.allItems(asked.id, owner) : undefined;
  if (!prior) throw notFound(asked.id);
  const joinedRequest = asked.join(prior);
  const joined: ResponsesRequest = { ...joinedRequest, echo: { ...joinedRequest.echo, conversation: { id: asked.id } } };
  const end = async (response: ResponseObject) => {
    const output = (response.output as unknown as readonly JsonObject[]) ?? [];
    const added = await store.append(asked.id, owner, [...asked.input, ...output], keepLimits(state));
    if (!added) throw notFound(asked.id);
  };
  return {
    parsed: joined,
    end,
    sse(codec, response) {
      const held: string[] = [];
      return {
        ...codec,
        events(delta, push) {
          if (delta.type === "finish") codec.events(delta, (part) => held.push(typeof part === "string" ? part : Buffer.from(part).toString("utf8")));
          else codec.events(delta, push);
        },
        end(push) {
          for (const part of held) push(part);
          codec.end(push);
        },
        failure(error, push) {
          if (held.length === 0) return codec.failure(error, push);
          // The answer is whole but the conversation did not take it: the client must not read it as kept.
          const { body } = toResponsesError(toGatewayError(error), parsed.param);
          push(`event: error\ndata: ${JSON.stringify({ type: "error", code: body.error.code, message: body.error.message, param: body.error.param, error: body.error })}\n\n`);
        },
        beforeEnd: () => end(response()),
      };
    },
  };
}
