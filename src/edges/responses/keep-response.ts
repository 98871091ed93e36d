import { toGatewayError } from "../../core/errors.js";
import type { ResponseState } from "../../response-state/response-state.js";
import type { ResponseObject } from "./response-object.js";
import { type StoredRecordParts, storedRecordOf } from "./stored-record.js";

const DAY_MS = 86_400_000;

/** Response states that end it: the ones a record is kept for. */
const ENDED = new Set(["completed", "incomplete", "failed"]);

/**
 * Keeps a response that ended, for responses.ttlDays. Awaited before the
 * terminal event goes out, so a client's next turn, on any replica, finds
 * it. A put that fails (the store unreachable, the key past
 * responses.maxStoredPerKey) never costs the answer: it is delivered
 * anyway, with `store` still true in it, a warning is logged, and the
 * response is not retrievable (a `previous_response_id` naming it gets the
 * 404). Resolves true when kept.
 */
export async function keepResponse(state: ResponseState, response: ResponseObject, parts: Omit<StoredRecordParts, "response">, requestId: string): Promise<boolean> {
  if (!ENDED.has(response.status) || response.id === "") return false;
  try {
    await state.store.put(storedRecordOf({ response, ...parts }), state.settings().ttlDays * DAY_MS);
    return true;
  } catch (error) {
    const e = toGatewayError(error);
    state.logger?.warn({ event: "responses.store_failed", requestId, code: e.code, error: e.message });
    return false;
  }
}
