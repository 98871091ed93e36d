import type { HostedOrigin } from "./chat-request.js";

/**
 * The one vocabulary every provider adapter speaks and every edge consumes.
 * Adapters translate wire events into these; edges translate these into wire
 * messages. Nothing between the two ever sees a provider's or a client's
 * format, which is what lets any edge serve any provider.
 */
export type Delta = StartDelta | TextDelta | ReasoningDelta | ToolCallDelta | HostedItemDelta | GatewayToolDelta | UsageDelta | LogprobsDelta | FinishDelta;

/** Opens every stream; produced by the pipeline, not by adapters. */
export interface StartDelta {
  readonly type: "start";
  readonly responseId: string;
  readonly provider: string;
  readonly model: string;
  /** Request parameters the provider cannot honour, dropped by the alias's dropUnsupportedParams. */
  readonly droppedParams?: readonly string[];
  /**
   * Set when the request's personal data was replaced by placeholders and
   * the answer carries the values put back: such an answer is not written
   * to the resumable-stream store (docs/compliance.md).
   */
  readonly restored?: boolean;
  /** Set when the answer is replayed from the response cache: which cache, and the request that produced it. */
  readonly cache?: { readonly kind: "exact" | "semantic"; readonly requestId: string; readonly similarity?: number };
  /**
   * The input usage the provider reported before its answer (Anthropic's
   * message_start; output 0), taken off the early usage delta that came
   * with the first content: the Messages edge's message_start carries it.
   * The whole usage delta still comes before `finish`.
   */
  readonly inputUsage?: Usage;
}

export interface TextDelta {
  readonly type: "text";
  readonly text: string;
}

/**
 * Reasoning text. `signature` closes a reasoning block (it signs the text
 * since the previous signature); `redactedData` is a withheld block of its
 * own. Both must reach the client unmodified so the turn can be replayed.
 */
export interface ReasoningDelta {
  readonly type: "reasoning";
  readonly text: string;
  readonly signature?: string;
  readonly redactedData?: string;
}

/**
 * A piece of a tool call. `id` and `name` come with the first piece of a call
 * (providers that send whole calls produce a single piece).
 */
export interface ToolCallDelta {
  readonly type: "tool_call";
  readonly index: number;
  readonly id?: string;
  readonly name?: string;
  readonly arguments: string;
  /** The provider's signature for this call (Gemini thoughtSignature). */
  readonly signature?: string;
}

/**
 * A hosted tool's call or result, whole, as the provider wrote it (a
 * Responses `web_search_call` item; an Anthropic `server_tool_use` or
 * `web_search_tool_result` block). Edges of the same origin relay it; the
 * others have nothing to show it with and skip it.
 */
export interface HostedItemDelta {
  readonly type: "hosted_item";
  readonly origin: HostedOrigin;
  readonly item: Readonly<Record<string, unknown>>;
}

/** A tool of an MCP server as the gateway declared it to the model for a call's tool loop. */
export interface GatewayToolInfo {
  /** The server's own name for it (the model saw `<server>_<name>`). */
  readonly name: string;
  readonly description?: string;
  readonly inputSchema: Readonly<Record<string, unknown>>;
  readonly annotations?: Readonly<Record<string, unknown>>;
}

/**
 * What the gateway's own tool loop did (call/gateway-tool-loop.ts): the
 * tools of an MCP server it listed for the model, a call the model made to
 * one of them, and its result. The gateway ran these calls itself, so the
 * caller sees them as the provider's own MCP items (Responses `mcp_*`
 * items, Messages `mcp_tool_*` blocks, gRPC's typed deltas), never as
 * function calls it would have to answer.
 */
export type GatewayToolEvent =
  | { readonly kind: "list"; readonly server: string; readonly tools: readonly GatewayToolInfo[] }
  /** `id` is the model's call id; `tool` the server's own name; `arguments` JSON as the model wrote it. */
  | { readonly kind: "call"; readonly id: string; readonly server: string; readonly tool: string; readonly arguments: string }
  /**
   * `output` is the result's text; `isError` the tool's own failure (its
   * content says why); `failure` the gateway's or the protocol's (not
   * granted, refused, unreachable), with its JSON-RPC code: the model was
   * told either way.
   */
  | {
      readonly kind: "result";
      readonly id: string;
      readonly server: string;
      readonly tool: string;
      readonly output: string;
      readonly isError: boolean;
      readonly failure?: { readonly code: number; readonly message: string };
    };

export interface GatewayToolDelta {
  readonly type: "gateway_tool";
  readonly event: GatewayToolEvent;
}

export interface TopLogprob {
  readonly token: string;
  readonly logprob: number;
  /** UTF-8 bytes of the token, where the provider gives them. */
  readonly bytes?: readonly number[];
}

export interface TokenLogprob extends TopLogprob {
  readonly topLogprobs: readonly TopLogprob[];
}

/** Log probabilities of the tokens of the text delta before it. */
export interface LogprobsDelta {
  readonly type: "logprobs";
  readonly tokens: readonly TokenLogprob[];
}

export interface Usage {
  /** Every prompt token: fresh, read from the provider's cache and written to it. */
  readonly inputTokens: number;
  readonly outputTokens: number;
  /** Prompt tokens read from the provider's cache (part of inputTokens). */
  readonly cachedInputTokens: number;
  readonly reasoningTokens: number;
  /**
   * Prompt tokens written to the provider's cache for five minutes (part of
   * inputTokens; absent is 0): Anthropic bills them above fresh input, so
   * they are counted apart to be priced apart (usage/cost.ts).
   */
  readonly cacheWrite5mTokens?: number;
  /** Prompt tokens written to the provider's cache for an hour (part of inputTokens; absent is 0). */
  readonly cacheWrite1hTokens?: number;
  /** Searches a hosted web search tool ran for this answer (priced by `price.perWebSearch`); absent: none. */
  readonly webSearches?: number;
  /** Upstream requests this usage covers (a gateway tool loop's rounds, priced by `price.perRequest`); absent: one. */
  readonly requests?: number;
  /** The provider reported no usage: the gateway counted the tokens itself (usage/usage-meter.ts). */
  readonly estimated?: boolean;
}

export interface UsageDelta extends Usage {
  readonly type: "usage";
  /**
   * Input counts the provider reported before the answer (Anthropic's
   * message_start), output not yet known: an adapter sends it just before
   * its first content delta, and the pipeline moves it onto `start`
   * (`inputUsage`), so edges see usage once. A whole usage delta follows.
   */
  readonly early?: boolean;
}

/** Closed list, mirrored by the protobuf enum and the OpenAI facade. */
export type FinishReason = "stop" | "length" | "tool_calls" | "content_filter" | "other" | "unspecified";

export interface FinishDelta {
  readonly type: "finish";
  readonly reason: FinishReason;
  /**
   * The stop sequence that ended a `stop` answer, when the provider says
   * which (Anthropic does): the Anthropic edge answers `stop_sequence` with it
   * instead of `end_turn`.
   */
  readonly stopSequence?: string;
}

/** Deltas adapters may emit: `start` belongs to the pipeline. */
export type ContentDelta = Exclude<Delta, StartDelta>;
