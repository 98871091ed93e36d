import type { JsonObject } from "../../response-state/response-ids.js";
import type { StoredResponse, StoredStatus } from "../../response-state/stored-response.js";
import { declaredTools } from "./declared-tools.js";
import type { ResponseEcho } from "./response-object.js";
import type { ResponseEncoderOptions } from "./to-responses.js";

/**
 * A background run's record, as far as its run needs one (a minimal
 * builder of its own: the foreground record's builder, stored-record.ts,
 * is written beside it and the two meet at merge).
 */

/** Statuses after which nothing changes. */
export function isTerminalStatus(status: StoredStatus): boolean {
  return status === "completed" || status === "failed" || status === "cancelled" || status === "incomplete";
}

/** `record` with `status` on both the record and its response object (and `error` when given). */
export function withStatus(record: StoredResponse, status: StoredStatus, error?: { readonly code: string; readonly message: string }): StoredResponse {
  const { leaseUntil: _, ...rest } = record;
  const response = { ...record.response, status, ...(error ? { error } : {}) };
  return isTerminalStatus(status) ? { ...rest, status, response } : { ...record, status, response };
}

const ECHO_FIELDS = ["instructions", "max_output_tokens", "metadata", "parallel_tool_calls", "temperature", "top_p", "tool_choice", "tools", "text", "reasoning", "service_tier", "user", "safety_identifier", "prompt_cache_key"] as const;

/**
 * What an encoder replaying a run's events needs, read back from its
 * stored response object: the same alias, echo, tool names and creation
 * time, so the replayed events are the original's, numbered alike.
 */
export function replayEncoderOptions(response: JsonObject): ResponseEncoderOptions {
  const echo: Record<string, unknown> = {};
  for (const field of ECHO_FIELDS) if (response[field] !== undefined) echo[field] = response[field];
  let calls: ResponseEncoderOptions["calls"];
  try {
    calls = declaredTools(Array.isArray(response.tools) ? response.tools : []).calls;
  } catch {
    calls = new Map();
  }
  return {
    requestModel: String(response.model ?? ""),
    echo: echo as unknown as ResponseEcho,
    calls,
    background: { createdAt: Number(response.created_at ?? 0), ...(typeof response.completed_at === "number" ? { completedAt: response.completed_at } : {}) },
  };
}
