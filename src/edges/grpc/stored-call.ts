import type { StreamOptions } from "../../call/call-layer.js";
import { aggregateDeltas } from "../../core/aggregate.js";
import type { ChatRequest } from "../../core/chat-request.js";
import type { Delta } from "../../core/delta.js";
import { GatewayError } from "../../core/errors.js";
import { replayForTarget } from "../../core/replay-origins.js";
import type { ResponseState } from "../../response-state/response-state.js";
import type { Principal } from "../../tenancy/principal.js";
import { storedRecord } from "./stored-record.js";
import { continueFrom } from "./stored-turns.js";

/** The request's fields about stored responses (StreamChatRequest and ChatRequest alike). */
export interface StoreFields {
  readonly store?: boolean;
  readonly previousResponseId: string;
}

/** A call with its stored-response part: the request to run, the stream options it adds, and what to await before the end is written. */
export interface StoredCall {
  readonly request: ChatRequest;
  readonly options: Pick<StreamOptions, "observe" | "prepare">;
  /**
   * Resolves once a finished answer is kept (at once when nothing is to be
   * kept, or the stream did not finish); rejects with the store's refusal
   * (the key's quota). Awaited before the end is written: a client may send
   * its next turn, with this response's id, the moment it sees the end.
   */
  readonly keep: () => Promise<void>;
}

const NOTHING = async (): Promise<void> => undefined;

async function* replayed(deltas: readonly Delta[]): AsyncGenerator<Delta> {
  yield* deltas;
}

const seconds = () => Math.floor(Date.now() / 1000);

function refuseWithoutState(fields: StoreFields): void {
  const field = fields.store === true ? "store" : fields.previousResponseId !== "" ? "previous_response_id" : undefined;
  if (field) throw new GatewayError("failed_precondition", `${field}: this gateway keeps no responses (responses.store is false)`, { field });
}

/**
 * `store` and `previous_response_id` on a gRPC chat call (docs/responses.md,
 * "gRPC"). The answer is watched through the call layer's `observe` (inside
 * a resumable stream too, so a client that left still has it kept) and put
 * once its `finish` is seen; nothing is kept for a stream that fails.
 */
export async function storedCall(state: ResponseState | undefined, fields: StoreFields, request: ChatRequest, principal: Principal | undefined): Promise<StoredCall> {
  if (!state) {
    refuseWithoutState(fields);
    return { request, options: {}, keep: NOTHING };
  }
  const owner = principal?.id ?? "";
  const previousId = fields.previousResponseId === "" ? undefined : fields.previousResponseId;
  const continued = previousId === undefined ? undefined : await continueFrom(state, previousId, owner, request);
  const run = continued?.request ?? request;
  const prepare: StreamOptions["prepare"] | undefined =
    continued && continued.origins.length > 0 ? async (r, target) => replayForTarget(r, continued.origins, { provider: target.provider.name, model: target.model }, continued.request.messages) : undefined;
  if (fields.store !== true) return { request: run, options: prepare ? { prepare } : {}, keep: NOTHING };

  const createdAt = seconds();
  const deltas: Delta[] = [];
  let kept: Promise<void> | undefined;
  const put = async () => {
    const result = await aggregateDeltas(replayed(deltas));
    deltas.length = 0;
    const { ttlDays } = state.settings();
    await state.store.put(storedRecord({ owner, request, createdAt, ...(previousId === undefined ? {} : { previousId }) }, result, seconds()), ttlDays * 86_400_000);
  };
  const observe = (delta: Delta) => {
    if (kept) return;
    deltas.push(delta);
    if (delta.type !== "finish") return;
    kept = put();
    // Awaited by keep(); until then a refusal must not surface as an unhandled rejection.
    kept.catch(() => undefined);
  };
  return { request: run, options: { observe, ...(prepare ? { prepare } : {}) }, keep: () => kept ?? NOTHING() };
}
