import type { Context } from "@opentelemetry/api";
import type { RouteTarget } from "../config/config.js";
import type { CachePolicy } from "../core/cache-policy.js";
import type { CallSummary } from "../core/call-summary.js";
import type { ChatRequest } from "../core/chat-request.js";
import type { Principal } from "../tenancy/principal.js";

/**
 * What the call layer hands the pipeline with a request: who asks, through
 * which edge, until when, and the summary its stages fill. Nothing here is
 * a callback up: what the stages decide for the response (its headers, the
 * access line's facts) goes into `summary`, which the call layer reads.
 */
export interface StreamContext {
  /**
   * Aborted when the client leaves or its deadline passes. Its reason must be
   * a GatewayError (`canceled`, `deadline_exceeded`, `shutting_down`): the
   * edge decides what the abort means, the pipeline only obeys it.
   */
  readonly signal: AbortSignal;
  readonly requestId: string;
  /** Which edge the request came through, for logs. */
  readonly edge: string;
  /** The client's deadline on the performance.now() clock: the budget for every attempt. */
  readonly deadlineAt?: number;
  /**
   * A per-target rewrite of the request that only the edge can make (the
   * replay of a previous turn's thinking signatures, Gemini's schema fit):
   * a downward transform applied by each attempt, not a report back up.
   */
  readonly prepare?: (request: ChatRequest, target: RouteTarget) => Promise<ChatRequest>;
  /** The request's trace context (its server span): upstream attempts are its children. */
  readonly trace?: Context;
  /** The call's one record; the pipeline makes its own when absent (a batch line, a summary). */
  readonly summary?: CallSummary;
  /** The key the edge authenticated; absent while authentication is off. */
  readonly principal?: Principal;
  /** The client's address, for the audit log's events about this call. */
  readonly remote?: string;
  /** Cost-allocation tags for the usage record (tenancy/tags.ts). */
  readonly tags?: Readonly<Record<string, string>>;
  /** A batch line: admitted at each provider behind interactive calls, within batch.maxShare. */
  readonly background?: boolean;
  /** What the caller lets the response cache do (Cache-Control, gRPC cache_policy). */
  readonly cachePolicy?: CachePolicy;
}
