import type { ContextSettings, ModelRoute, RouteTarget } from "../config/config.js";
import type { ChatRequest } from "../core/chat-request.js";
import { GatewayError } from "../core/errors.js";
import { pooledCounter } from "../usage/pooled-count.js";
import { promptParts } from "../usage/prompt-size.js";
import type { CountTokens } from "../usage/token-count.js";
import { capToolResults, fixedTokens, messageTokens, truncateToFit } from "./fit-context.js";
import { MISSING_WORDS, type Missing, missingOf, needsOf, promptTokenBound } from "./request-needs.js";
import { createSummaryCache, type Summarize, type SummaryCache, summarizeToFit } from "./summarize-turns.js";

/** Without a cache of their own, summaries are not kept between requests. */
const NO_SUMMARIES: SummaryCache = createSummaryCache(0);

/** Output tokens kept free when neither the request nor the alias says how many. */
export const DEFAULT_RESERVED_OUTPUT = 1_024;

/** What routing by need may call on: the tokenizer, and (for `summarize`) the summarizer with its cache. */
export interface NeedDeps {
  /** Unset: the tokenizer, with the prompt's long texts counted in the worker pool (usage/pooled-count.ts). */
  readonly counter?: () => Promise<CountTokens>;
  /** The call's: a count waiting for the pool stops when the caller leaves. */
  readonly signal?: AbortSignal;
  readonly summarize?: Summarize;
  readonly summaries?: SummaryCache;
  /** Whose conversation it is, for the summary cache (the key's name). */
  readonly scope?: string;
  /** Told when the summarizer failed and the request was truncated instead. */
  readonly onSummaryFailed?: (error: unknown) => void;
}

/** Where a request may go once its needs are known, and the request as it will be sent. */
export interface Routed {
  readonly route: ModelRoute;
  readonly request: ChatRequest;
  /** What was done to fit it (`truncated=K` turns dropped), for the `sluice-context` header and the usage record. */
  readonly context?: string;
}

const windowOf = (target: RouteTarget) => target.capabilities?.contextWindow ?? Number.POSITIVE_INFINITY;
const withTargets = (route: ModelRoute, targets: readonly RouteTarget[]) => (targets.length === route.targets.length ? route : { ...route, targets });

function refused(alias: string, why: string): GatewayError {
  return new GatewayError("failed_precondition", `model "${alias}" cannot serve this request: ${why}`);
}

/**
 * How the request is fitted: the alias's context settings, or, for a
 * request that accepts truncation (`truncation: "auto"`) on an alias that
 * would refuse it, its oldest turns dropped (the last turn always kept).
 */
function contextFor(request: ChatRequest, route: ModelRoute): ContextSettings | undefined {
  if (request.truncation !== "auto" || (route.context !== undefined && route.context.strategy !== "reject")) return route.context;
  return { keepSystem: true, keepLastTurns: 1, reserveOutputTokens: DEFAULT_RESERVED_OUTPUT, ...route.context, strategy: "truncate" };
}

/**
 * The routing stage that knows what a request needs (docs/routing.md,
 * "Capabilities"): targets that lack a capability it needs are dropped
 * before the strategy orders the rest, so failover and hedging stay among
 * those that can serve it, and a request none can serve is refused with
 * FAILED_PRECONDITION before any upstream call. Long tool results are cut
 * to the alias's maxToolResultTokens; a conversation longer than every
 * window is refused or, with `context.strategy: truncate`, fitted to the
 * largest by dropping its oldest turns, or with `summarize` by replacing
 * them with a summary (truncating when the summarizer fails, and saying
 * so). The tokenizer runs only when a byte
 * bound says the prompt might not fit: a short prompt costs no count.
 */
export async function routeByNeed(request: ChatRequest, route: ModelRoute, deps: NeedDeps = {}): Promise<Routed> {
  let sent = request;
  const counter = deps.counter ?? (() => pooledCounter(promptParts(sent).texts, deps.signal));
  const needs = needsOf(request);
  const lacking = new Set<Missing>();
  const capable = route.targets.filter((target) => {
    const missing = missingOf(needs, target.capabilities);
    if (missing) lacking.add(missing);
    return missing === undefined;
  });
  if (capable.length === 0) throw refused(route.alias, `it needs ${[...lacking].map((m) => MISSING_WORDS[m]).join(" and ")}, which none of its targets has`);

  if (route.maxToolResultTokens !== undefined && request.messages.some((m) => m.role === "tool")) {
    sent = capToolResults(request, route.maxToolResultTokens, await counter()).request;
  }

  const context = contextFor(request, route);
  const smallest = Math.min(...capable.map(windowOf));
  const reserve = needs.outputTokens ?? context?.reserveOutputTokens ?? DEFAULT_RESERVED_OUTPUT;
  if (smallest === Number.POSITIVE_INFINITY || promptTokenBound(sent) + reserve <= smallest) return { route: withTargets(route, capable), request: sent };

  const count = await counter();
  const tokens = fixedTokens(sent, count) + sent.messages.reduce((sum, m) => sum + messageTokens(m, count), 0);
  const fitting = capable.filter((target) => tokens + reserve <= windowOf(target));
  if (fitting.length > 0) return { route: withTargets(route, fitting), request: sent };

  const largest = Math.max(...capable.map(windowOf));
  const size = `the conversation takes ${tokens} tokens and ${reserve} more are kept for the answer, more than the largest context window of its targets (${largest})`;
  if (context === undefined || context.strategy === "reject") throw refused(route.alias, `${size}; shorten it, or set models.${route.alias}.context.strategy: truncate or summarize`);
  const largestTargets = withTargets(
    route,
    capable.filter((t) => windowOf(t) >= largest),
  );
  let summaryFailed = false;
  if (context.strategy === "summarize" && deps.summarize) {
    try {
      const summarized = await summarizeToFit(sent, largest - reserve, context, count, deps.summarize, deps.summaries ?? NO_SUMMARIES, deps.scope ?? "");
      if (summarized) return { route: largestTargets, request: summarized.request, context: `summarized=${summarized.summarized}` };
    } catch (error) {
      summaryFailed = true;
      deps.onSummaryFailed?.(error);
    }
  }
  const fitted = truncateToFit(sent, largest - reserve, context, count);
  if (!fitted) throw refused(route.alias, `${size}, even without its oldest turns (the system prompt and the last ${context.keepLastTurns} turns are kept)`);
  return { route: largestTargets, request: fitted.request, context: `truncated=${fitted.dropped}${summaryFailed ? "; summary=failed" : ""}` };
}
