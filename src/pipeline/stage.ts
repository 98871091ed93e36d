import type { Screened } from "../compliance/screen-request.js";
import type { Config, ModelRoute, RouteTarget } from "../config/config.js";
import type { CallSummary } from "../core/call-summary.js";
import type { ChatRequest } from "../core/chat-request.js";
import type { ContentDelta, Delta, StartDelta } from "../core/delta.js";
import type { DeltaSink } from "../core/delta-sink.js";
import { GatewayError } from "../core/errors.js";
import type { StreamObserver } from "../flow/observer.js";
import type { RouteTable } from "../routing/route-table.js";
import type { TenantCharge } from "../tenancy/tenant-charge.js";
import type { UsageMeter } from "../usage/usage-meter.js";
import type { StreamContext } from "./stream-context.js";

/**
 * One call as the stages see it while they open: what they may read (the
 * configuration current when it started, the edge's context) and what they
 * may change (the request, the route, the charge), in table order. Once
 * the stages are open the attempts read `request` and `route` from here.
 */
export interface CallState {
  readonly config: Config;
  readonly routes: RouteTable;
  readonly ctx: StreamContext;
  readonly summary: CallSummary;
  /** What the call is: a stream of deltas, or an embedding (one answer, no deltas to tap). */
  readonly operation: "chat" | "embeddings";
  /** Ends the call from outside its path (shutdown, a drain's deadline); the first end wins. */
  readonly stop: (reason: GatewayError) => void;
  /** Aborted when the call ends, whatever ends it: a stage's own waits (a summary, a cache lookup) stop with it. */
  readonly signal: AbortSignal;
  /** Counts the answer as it passes (usage/usage-meter.ts); the charge settles with it. */
  readonly meter: UsageMeter;
  request: ChatRequest;
  /** Undefined until the `route` stage looked the alias up. */
  route: ModelRoute | undefined;
  /** NO_CHARGE until the `allowlist` stage opened the key's charge. */
  charge: TenantCharge;
  /** The stream's telemetry; a no-op observer until the `telemetry` stage opens it. */
  observer: StreamObserver;
  /** The request as screened for personal data (unscreened until the `redact` stage screens it). */
  screened: Screened;
  /** What the response cache keys the call by; undefined: the cache is not used (the prompt held what must not be stored). */
  cacheRequest: ChatRequest | undefined;
  /** Answers are restored (placeholders back to the personal data they hid): `start` says so. */
  restored: boolean;
  /** The target whose attempt committed (or whose cached answer was replayed). */
  servedBy: RouteTarget | undefined;
  /** Set when the gateway ended the answer itself (an answer-limit stage). */
  cut: Stop | undefined;
}

/** How a call ended, as every stage's `end` hears it: a failure, or completed (perhaps cut). */
export interface CallOutcome {
  readonly failure?: GatewayError;
  readonly cut?: Stop;
}

/** A stage ending the answer early: the upstream stops, what was delivered is counted, the client sees `finish`. */
export interface Stop {
  readonly reason: string;
  readonly finish: "length";
}

/** A short-circuit: the stage answers the call itself (a cache hit); later stages and the attempts do not run. */
export interface Answer {
  readonly start: Omit<StartDelta, "type" | "responseId">;
  readonly deltas: readonly ContentDelta[];
}

/**
 * What a stage leaves for the rest of one call; every member optional.
 * `tap` is on the per-delta path: it must be cheap and never throw.
 */
export interface StagePart {
  /** Sees each delta forwarded to the client, `start` included, before the sink. */
  readonly tap?: (delta: Delta) => void;
  /**
   * Asked once an attempt commits: a check on each content delta before it
   * is delivered, when the stage bounds the answer (none: such calls pay
   * nothing per delta). A Stop ends the answer there; that delta is not
   * delivered.
   */
  readonly guard?: (target: RouteTarget) => ((delta: ContentDelta) => Stop | undefined) | undefined;
  /** At `finish`: a delta to send before it (an estimated usage), when the stage has one to add. */
  readonly beforeFinish?: () => Promise<Delta | undefined> | undefined;
  /** Wraps the client's sink (restoring redacted data); applied in table order, so the first stage's wrapper is innermost. */
  readonly wrap?: (sink: DeltaSink<Delta>) => DeltaSink<Delta>;
  /** Run once however the call ended, in reverse table order, before the client's sink hears the end. */
  readonly end?: (outcome: CallOutcome) => void;
  /** Set when the stage answers the call itself. */
  readonly answer?: Answer;
}

/**
 * One feature on the request path. Opened once per call in table order
 * (stages/index.ts): it may rewrite `call.request`, narrow `call.route`,
 * refuse (throw a GatewayError), or answer (a part with `answer`); what it
 * returns stays with the call until it ends.
 */
export interface Stage {
  /** For logs and the architecture doc. */
  readonly name: string;
  /** The stage's work for one call; `undefined` when it has nothing more to do for it. */
  open(call: CallState): StagePart | undefined | Promise<StagePart | undefined>;
}

/** The call's route, for stages after `route` in the table (an internal error if the table is out of order). */
export function routeOf(call: CallState): ModelRoute {
  if (!call.route) throw new GatewayError("internal", "a stage that needs the route runs before the route stage");
  return call.route;
}
