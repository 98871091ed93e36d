import type { ProviderConfig } from "../config/config.js";
import type { AnthropicThinking } from "../config/schema.js";
import type { ChatRequest, HostedOrigin, HostedTool } from "../core/chat-request.js";
import type { ContentDelta } from "../core/delta.js";
import type { GatewayError } from "../core/errors.js";
import type { OptionalParam } from "../core/request-params.js";
import type { SseDecoder, SseDecoderOptions, SseEvent } from "../sse/decoder.js";
import type { UpstreamRequest } from "../upstream/http-client.js";

/** Where one request goes: the configured provider and its model id. */
export interface UpstreamTarget {
  readonly provider: ProviderConfig;
  readonly model: string;
  /** Anthropic: the configured thinking form (target over provider); unset = by model name. */
  readonly thinking?: AnthropicThinking;
  /** The alias's promptCache: `auto` places cache breakpoints where the provider takes them (Anthropic). */
  readonly promptCache?: "auto";
}

export type { UpstreamRequest };

/** What the pipeline knows about a failed upstream response. */
export interface UpstreamFailure {
  readonly status: number;
  readonly headers: Readonly<Record<string, string | string[] | undefined>>;
  /** The body, cut to a few KiB. */
  readonly body: string;
}

/**
 * Per-request translation of a provider's event stream into deltas. It holds
 * the parser state for one response (open tool calls, pending finish) and is
 * never shared.
 */
export interface StreamTranslator {
  /** Deltas for one SSE event. Throws GatewayError for in-band errors and malformed events. */
  event(event: SseEvent): readonly ContentDelta[];
  /** The upstream body ended: the last deltas, or a GatewayError if the stream was cut short. */
  end(): readonly ContentDelta[];
}

/**
 * Everything provider-specific, behind one small surface: how to ask, how to
 * read the answer, how to read a refusal. The pipeline owns transport,
 * timeouts, cancellation and logging for all providers alike.
 */
export interface ProviderAdapter {
  /**
   * The optional parameters of `request` this target cannot honour (empty
   * when it can honour them all). The pipeline applies the unsupported-
   * parameter rule to this list (see param-policy.ts) before buildRequest.
   */
  unsupportedParams(request: ChatRequest, target: UpstreamTarget): OptionalParam[];
  buildRequest(request: ChatRequest, target: UpstreamTarget): UpstreamRequest;
  /** A translator for one response to `request` (which decides, e.g., whether reasoning text is forwarded). */
  createTranslator(target: UpstreamTarget, request: ChatRequest): StreamTranslator;
  errorFromResponse(failure: UpstreamFailure, target: UpstreamTarget): GatewayError;
  /** The hosted tools this provider runs, as declared or as its own equivalent; absent: none (hosted-tools.ts). */
  readonly hosted?: HostedSupport;
  /** How the answer's stream is framed; absent: server-sent events. */
  readonly framing?: StreamFraming;
  /**
   * The asynchronous last step before the request is sent: a signature over
   * the final URL, headers and body (SigV4), or a bearer token that may need
   * a refresh (OAuth). Absent: buildRequest's headers are final.
   */
  authorize?(request: UpstreamRequest, target: UpstreamTarget, signal: AbortSignal): Promise<UpstreamRequest>;
}

/**
 * A stream framing other than SSE (AWS event-stream for Bedrock). Its
 * decoder yields the same events a translator reads: the event type as
 * `event`, the payload as `data`, so one translator shape serves both.
 */
export interface StreamFraming {
  /** Whether the response headers announce this framing (its content type). */
  accepts(headers: UpstreamFailure["headers"]): boolean;
  createDecoder(options: SseDecoderOptions): SseDecoder;
}

/**
 * What a provider does with hosted tools: the origin whose declarations and
 * items it takes as they are, and its own equivalent of another origin's
 * tool (web search on Anthropic for OpenAI's `web_search`; Google Search
 * grounding on Gemini).
 */
export interface HostedSupport {
  readonly origin?: HostedOrigin;
  /** This provider's declaration for `tool` from another origin; undefined: it has none. */
  equivalent(tool: HostedTool): HostedTool | undefined;
}
