import type { InBandKind, Knobs } from "./knobs.js";
import type { PromptBlock } from "./prompt-cache.js";
import type { Script } from "./script.js";
import type { DeclaredTool, Turn } from "./tool-loop.js";

/** One SSE event the simulator will write. `token` events are paced and counted. */
export interface Frame {
  readonly event?: string;
  readonly data: string;
  readonly token: boolean;
}

/** What a wire format needs to know about the incoming request. */
export interface SimRequest {
  readonly model: string;
  readonly stream: boolean;
  /** Every text in the request, for `#sim` directives and token counting. */
  readonly texts: readonly string[];
  /** The declared tools and the conversation, as the tool loop reads them (tool-loop.ts). */
  readonly tools: readonly DeclaredTool[];
  readonly turns: readonly Turn[];
  /** The request's output limit (max_tokens, max_completion_tokens, maxOutputTokens). */
  readonly maxTokens?: number;
  readonly includeUsage: boolean;
  /** The request asked for JSON: with a schema (structured outputs) or any object (JSON mode). */
  readonly json?: { readonly schema?: Record<string, unknown> };
  /** The request asked for token log probabilities, with this many alternatives. */
  readonly logprobs?: { readonly top: number };
  /** The prompt in cache order, when it marks cache breakpoints (Anthropic); other requests are never cached. */
  readonly promptBlocks?: readonly PromptBlock[];
  /** The request makes the model think on every turn (Anthropic `thinking: enabled`): it thinks even when the `reasoning` knob is 0. */
  readonly mustThink?: boolean;
}

/**
 * A provider wire format the simulator speaks. The server owns pacing,
 * chunking, failures and recording; a format only says how a script looks
 * on its wire, so every failure mode exists for every format.
 */
export interface WireFormat {
  readonly name: string;
  /**
   * Parses the JSON body; throws with a message fit for a 400. This is also
   * where a format checks replayed signatures, as its provider does.
   */
  parseRequest(body: unknown, url: URL): SimRequest;
  streamFrames(script: Script, request: SimRequest, knobs: Knobs, responseId: string): Frame[];
  /** The frame after the last event, if the format has one (OpenAI's `[DONE]`). */
  readonly terminator?: Frame;
  completeBody(script: Script, request: SimRequest, responseId: string): unknown;
  errorBody(status: number, message: string): unknown;
  /** An error reported inside a stream, as the provider does it, of the class `knobs.inband` names. */
  inBandError(message: string, kind: InBandKind): Frame;
  /** A keepalive as the provider sends it; a comment line when absent. */
  ping?(): Frame;
  /** The stream's framing when it is not SSE (AWS event-stream): its content type and how one frame is written. */
  readonly framing?: { readonly contentType: string; encode(frame: Frame): Buffer };
  /** Checks the request's credentials as the provider would (a signature, a token, a key); a refusal is answered before the body is parsed. */
  checkAuth?(request: AuthCheck): AuthRefusal | undefined | Promise<AuthRefusal | undefined>;
}

/** What a credential check sees: everything that was sent. */
export interface AuthCheck {
  readonly method: string;
  readonly url: URL;
  readonly headers: Readonly<Record<string, string | string[] | undefined>>;
  readonly body: string;
}

/** A refused credential: the status and message the provider would send. */
export interface AuthRefusal {
  readonly status: 401 | 403;
  readonly message: string;
}
