import type { RouteTarget } from "../config/config.js";
import type { GatewayError } from "../core/errors.js";

/** How one upstream attempt ended, from the request's point of view. */
export type AttemptOutcome =
  /** It produced the first delta: the request is committed to it. */
  | "committed"
  /** It failed before its first delta. */
  | "failed"
  /** The provider's admission queue shed it. */
  | "shed"
  /** Another attempt (a hedge, or the original) produced its first delta first. */
  | "lost_hedge"
  /** The client left, or the gateway ended the request. */
  | "canceled";

export interface AttemptInfo {
  readonly alias: string;
  readonly target: RouteTarget;
  /** 0 for the first attempt of the request. */
  readonly index: number;
  /** Started in parallel with another attempt because no first delta came in time. */
  readonly hedge: boolean;
  /** A target this request already tried. */
  readonly retry: boolean;
}

export interface AttemptRecord extends AttemptInfo {
  readonly outcome: AttemptOutcome;
  /** From the attempt's start to its first delta or its failure. */
  readonly ms: number;
  readonly error?: GatewayError;
}

/**
 * What the stages report as they work, for logs, metrics and traces. Every
 * hook is optional and must be cheap: they run on the request path.
 */
export interface PipelineObserver {
  attemptStarted?(info: AttemptInfo): void;
  attemptEnded?(record: AttemptRecord): void;
}
