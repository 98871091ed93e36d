/**
 * What became of one call, written by the stages that decided it and read
 * by every sink (the response headers, the access line, the usage record):
 * one record per call instead of each sink being told separately. The
 * call layer creates it, the pipeline's stages fill it, and nothing in it
 * is a client's free text or a secret.
 */
export interface CallSummary {
  /**
   * Response headers the stages settled before the first item or the
   * refusal: what is left of the key's limits, what the cache did, how the
   * conversation was fitted. The call layer sends them with the response.
   */
  readonly headers: Record<string, string>;
  /** Facts for the access line and the debug log; each is set by the one stage that owns it. */
  readonly facts: CallFacts;
  /** What the usage record keeps of the call besides its usage (usage/usage-record.ts). */
  readonly record: CallRecordFacts;
  /** When the call waited on its upstream, for `sluice-overhead-ms` (call/overhead.ts); stamped by the `overhead` stage. */
  readonly upstream: UpstreamWindow;
}

/**
 * The moments (performance.now()) that bound a call's wait on its
 * upstream: the first upstream request sent, the first delta any attempt
 * decoded, the call's end. Each is stamped once, by the first to reach it.
 */
export interface UpstreamWindow {
  sentAt?: number;
  answeredAt?: number;
  endedAt?: number;
}

/** The usage record's facts a stage settles: counts and labels, never values. */
export interface CallRecordFacts {
  /** Served from the response cache, and what that saved (0 when hits are charged). */
  cacheHit?: { readonly kind: "exact" | "semantic"; readonly savedMicros: number };
  /** Personal data found in the request, by detector: counts only. */
  pii?: Readonly<Record<string, number>>;
  /** How the conversation was fitted to the context window (`truncated=K`). */
  context?: string;
}

/** The access line's view of a call. Optional: a call refused early has few. */
export interface CallFacts {
  /** The configured alias, or `unknown`. */
  alias?: string;
  provider?: string;
  model?: string;
  attempts?: number;
  /** Each attempt, when there were several: `target outcome [code] Nms`. */
  tried?: readonly string[];
  finishReason?: string;
  deltas?: number;
  inputTokens?: number;
  outputTokens?: number;
  ttftMs?: number;
  outcome?: string;
  errorCode?: string;
  error?: string;
  upstreamStatus?: number;
  cause?: string;
  /** `sluice-cache`'s value: hit_exact, hit_semantic, miss, bypass, off… */
  cache?: string;
  /** `sluice-context`'s value (`truncated=K`, `summarized=K`). */
  context?: string;
  /** The kinds of personal data the request held, comma-separated. */
  pii?: string;
  /** Why the gateway cut the answer (`max_tokens`, `budget`). */
  cut?: string;
}

export function createCallSummary(): CallSummary {
  return { headers: {}, facts: {}, record: {}, upstream: {} };
}
