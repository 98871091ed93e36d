import type { ChatRequest } from "./chat-request.js";
import { GatewayError } from "./errors.js";

/** One input to embed: a text, or token ids (OpenAI's token-array form, for callers that tokenised already). */
export type EmbedInput = string | readonly number[];

/** An embedding request, whatever edge it came through. */
export interface EmbedRequest {
  /** Model alias as the client named it. */
  readonly model: string;
  readonly inputs: readonly EmbedInput[];
  /** Ask the model for shorter vectors (models that support it); unset: the model's own size. */
  readonly dimensions?: number;
  /** The caller's end user, for attribution (OpenAI `user`). */
  readonly user?: string;
}

/** What an embedding call returns: one vector per input, in input order. */
export interface EmbedResult {
  readonly vectors: readonly Float32Array[];
  readonly inputTokens: number;
  /** The provider reported no token count: the gateway counted the inputs itself. */
  readonly estimated: boolean;
  /** The provider and model that answered (failover may have moved the call). */
  readonly provider: string;
  readonly model: string;
}

/** Inputs in one request: OpenAI's own limit, and what a provider batch takes. */
export const MAX_EMBED_INPUTS = 2_048;
/** Token ids in one token-array input. */
export const MAX_EMBED_TOKENS_PER_INPUT = 8_192;
/** Characters of text in one request, all inputs together: a few times the largest models' context. */
export const MAX_EMBED_CHARS = 4 * 1024 * 1024;
/** The most dimensions a caller may ask for. */
export const MAX_EMBED_DIMENSIONS = 16_384;

function invalid(message: string, field: string): GatewayError {
  return new GatewayError("invalid_request", message, { field });
}

/**
 * Checks what every edge's decoder produced, before any upstream work: the
 * limits on counts and sizes, empty inputs, the dimensions asked for. Each
 * edge names fields in its own words; `fields` maps ours to them.
 */
export function validateEmbedRequest(request: EmbedRequest, fields: { readonly inputs: string; readonly dimensions: string }): EmbedRequest {
  const { inputs } = request;
  if (inputs.length === 0) throw invalid("at least one input is required", fields.inputs);
  if (inputs.length > MAX_EMBED_INPUTS) throw invalid(`${inputs.length} inputs; at most ${MAX_EMBED_INPUTS} in one request`, fields.inputs);
  let chars = 0;
  inputs.forEach((input, i) => {
    if (input.length === 0) throw invalid(`input ${i} is empty`, `${fields.inputs}[${i}]`);
    if (typeof input === "string") chars += input.length;
    else {
      if (input.length > MAX_EMBED_TOKENS_PER_INPUT) throw invalid(`input ${i} has ${input.length} tokens; at most ${MAX_EMBED_TOKENS_PER_INPUT}`, `${fields.inputs}[${i}]`);
      if (!input.every((t) => Number.isInteger(t) && t >= 0 && t <= 0xffffffff)) throw invalid(`input ${i}: token ids are non-negative integers`, `${fields.inputs}[${i}]`);
    }
  });
  if (inputs.some((input) => typeof input !== typeof inputs[0])) throw invalid("inputs are all texts or all token arrays, not a mix", fields.inputs);
  if (chars > MAX_EMBED_CHARS) throw invalid(`the inputs hold ${chars} characters; at most ${MAX_EMBED_CHARS} in one request`, fields.inputs);
  const { dimensions } = request;
  if (dimensions !== undefined && (!Number.isInteger(dimensions) || dimensions < 1 || dimensions > MAX_EMBED_DIMENSIONS)) {
    throw invalid(`dimensions must be an integer in 1..${MAX_EMBED_DIMENSIONS}`, fields.dimensions);
  }
  return request;
}

/**
 * The request as the chat stages see one: every text input a user message.
 * What an embedding call shares with a chat call (the key's allowlist and
 * limits, the budget's reservation, the token count when a provider reports
 * none, telemetry's request attributes) reads a ChatRequest, and an
 * embedding is a prompt with no output; one view keeps those stages single.
 * Token-array inputs count as a word per id.
 */
export function embedAsChat(request: EmbedRequest): ChatRequest {
  return {
    model: request.model,
    messages: request.inputs.map((input) => ({ role: "user", content: [{ type: "text", text: typeof input === "string" ? input : input.map(() => "x").join(" ") }] })),
    tools: [],
    sampling: { stop: [], maxTokens: 0 },
    metadata: { labels: {}, ...(request.user === undefined ? {} : { userId: request.user }) },
  };
}
