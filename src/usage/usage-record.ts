import type { RouteTarget } from "../config/config.js";
import type { CallRecordFacts } from "../core/call-summary.js";
import type { GatewayError } from "../core/errors.js";
import { billedRequests, costPicos, microsOf } from "./cost.js";
import type { MeteredUsage } from "./usage-meter.js";

export type StreamOutcome = "completed" | "canceled" | "failed";

/** One stream's end, as kept in the usage stream and counted into rollups. */
export interface UsageRecord {
  /** Unique per charged call (its admission id): the ledger's row key, so a record written twice is one row. */
  readonly id?: string;
  readonly requestId: string;
  /** The key's name, for people to read. */
  readonly key: string;
  /** The key's id (Principal.id): who it was, whatever key bears its name later. */
  readonly keyId?: string;
  /** The key's team and business line when the request was admitted, for allocation: names, and their ids. */
  readonly team?: string;
  readonly teamId?: string;
  readonly businessLine?: string;
  readonly businessLineId?: string;
  /** Cost-allocation tags the request carried, of the keys auth.tagKeys allows. */
  readonly tags?: Readonly<Record<string, string>>;
  readonly alias: string;
  /** `provider/model` that served; empty when no attempt produced anything. */
  readonly target: string;
  readonly inputTokens: number;
  readonly outputTokens: number;
  readonly cachedInputTokens: number;
  /** Input tokens written to the provider's cache for five minutes and for an hour (part of inputTokens); absent is 0. */
  readonly cacheWrite5mTokens?: number;
  readonly cacheWrite1hTokens?: number;
  readonly reasoningTokens: number;
  /** Searches a hosted web search tool ran (priced by `perWebSearch`); absent is 0. */
  readonly webSearches?: number;
  /** Upstream requests that answered (priced by `perRequest`: usage/cost.ts billedRequests); absent is 0. */
  readonly billedRequests?: number;
  /** What budgets count: the cost in micro-dollars, rounded up. */
  readonly costMicros: number;
  /**
   * The same cost exactly, in pico-dollars (usage/cost.ts): a figure like
   * $1.06376125 has no integer micro-dollar value. Exact below $9,000 per
   * call (a double's integers). Absent on records written before it.
   */
  readonly costPicos?: number;
  /** The provider reported no usage: the gateway counted it. */
  readonly estimated: boolean;
  readonly ttftMs?: number;
  readonly durationMs: number;
  readonly outcome: StreamOutcome;
  /** The gateway error code when the stream did not complete. */
  readonly code?: string;
  /** Served from the response cache (no provider was called). */
  readonly cache?: "exact" | "semantic";
  /** A cache hit's cost had a provider answered, at the producing target's price; 0 when hits are charged. */
  readonly savedMicros?: number;
  /** Served by a target marked local (docs/compliance.md, "Local targets"). */
  readonly local?: boolean;
  /** How the conversation was fitted to the context window (`truncated=K`). */
  readonly context?: string;
  /** Personal data found in the request, by detector: counts only, never values. */
  readonly pii?: Readonly<Record<string, number>>;
  /** What was charged: a model call (absent, as on every record written before tools), or an MCP tool call (mcp/accounting/). */
  readonly kind?: "tool";
  /** A tool call's server, exposed tool name and result size (`kind: tool` only); `alias` holds the exposed name too. */
  readonly tool?: ToolRecordFacts;
  /** Epoch milliseconds when the stream ended (the replica's clock). */
  readonly at: number;
  /** The replica that served it (host/pid). */
  readonly replica?: string;
}

/** What a tool call's record says of the tool besides what every record says. */
export interface ToolRecordFacts {
  readonly server: string;
  /** The exposed name (`<server>_<tool>`). */
  readonly name: string;
  readonly resultBytes: number;
}

/** Who a charged call was, as its record names them: the key, and its team and business line when it had them (names and ids). */
export interface ChargedIdentity {
  readonly requestId: string;
  readonly key: { readonly id: string; readonly name: string };
  readonly team?: { readonly id: string; readonly name: string };
  readonly businessLine?: { readonly id: string; readonly name: string };
  readonly tags?: Readonly<Record<string, string>>;
  readonly alias: string;
}

/** What one call's usage record is made of: who, what it used, how it ended, and what its stages settled (the call summary's record facts). */
export interface RecordSources {
  /** The admission id: the ledger's row key. */
  readonly id: string;
  readonly identity: ChargedIdentity;
  readonly target: RouteTarget | undefined;
  readonly usage: MeteredUsage;
  readonly ttftMs: number | undefined;
  readonly durationMs: number;
  readonly failure: GatewayError | undefined;
  readonly call: CallRecordFacts;
  readonly at: number;
  readonly replica?: string;
}

const outcomeOf = (reason: GatewayError | undefined): StreamOutcome => (reason === undefined ? "completed" : reason.code === "canceled" ? "canceled" : "failed");

/** The usage record of one call: the one place a record is made, whichever sink (Redis, the ledger, GetUsage) reads it. */
export function usageRecordOf(sources: RecordSources): UsageRecord {
  const { identity, usage, target, failure, call } = sources;
  const picos = costPicos(usage, target?.price);
  return {
    id: sources.id,
    requestId: identity.requestId,
    key: identity.key.name,
    keyId: identity.key.id,
    ...(identity.team === undefined ? {} : { team: identity.team.name, teamId: identity.team.id }),
    ...(identity.businessLine === undefined ? {} : { businessLine: identity.businessLine.name, businessLineId: identity.businessLine.id }),
    ...(identity.tags && Object.keys(identity.tags).length > 0 ? { tags: identity.tags } : {}),
    alias: identity.alias,
    target: target?.key ?? "",
    inputTokens: usage.inputTokens,
    outputTokens: usage.outputTokens,
    cachedInputTokens: usage.cachedInputTokens,
    ...(usage.cacheWrite5mTokens ? { cacheWrite5mTokens: usage.cacheWrite5mTokens } : {}),
    ...(usage.cacheWrite1hTokens ? { cacheWrite1hTokens: usage.cacheWrite1hTokens } : {}),
    reasoningTokens: usage.reasoningTokens,
    ...(usage.webSearches ? { webSearches: usage.webSearches } : {}),
    ...(billedRequests(usage) > 0 ? { billedRequests: billedRequests(usage) } : {}),
    costMicros: microsOf(picos),
    costPicos: Number(picos),
    estimated: usage.estimated,
    ...(sources.ttftMs === undefined ? {} : { ttftMs: sources.ttftMs }),
    durationMs: sources.durationMs,
    outcome: outcomeOf(failure),
    ...(failure ? { code: failure.code } : {}),
    ...(call.cacheHit ? { cache: call.cacheHit.kind, savedMicros: call.cacheHit.savedMicros } : {}),
    ...(target?.local ? { local: true } : {}),
    ...(call.pii ? { pii: call.pii } : {}),
    ...(call.context ? { context: call.context } : {}),
    at: sources.at,
    ...(sources.replica === undefined ? {} : { replica: sources.replica }),
  };
}
