import type { RouteTarget } from "../../config/config.js";
import { type ChatRequest, MIN_THINKING_BUDGET_TOKENS, messageText, type ProviderKind, type ReasoningEffort } from "../../core/chat-request.js";
import { signaturesFor } from "./thought-signatures.js";

/**
 * A thinking budget as the effort a wire without budgets takes (Chat
 * Completions): Gemini CLI and the genai SDK send a budget for thinking
 * models, and a hint of how long to think must not fail a request on a
 * target that only takes a level. The bounds are Gemini's own levels'
 * budgets (low ≈ 1k, medium ≈ 8k, high above).
 */
function effortOf(budget: number): ReasoningEffort {
  if (budget <= 1_024) return "low";
  if (budget <= 8_192) return "medium";
  return "high";
}

/** OpenAI's two wires (Chat Completions, Responses): thinking by level, no top-k, no failure flag on a tool's output. */
const openAiWire = (kind: ProviderKind): boolean => kind === "openai" || kind === "openai-responses";

/** The thinking settings as `kind`'s wire takes them: a budget becomes an effort on OpenAI's, and at least Anthropic's minimum on Anthropic's. */
function thinkingFor(request: ChatRequest, kind: ProviderKind): ChatRequest {
  const budget = request.reasoning?.budgetTokens;
  if (budget === undefined || kind === "gemini") return request;
  const { budgetTokens: _budget, ...rest } = request.reasoning!;
  if (openAiWire(kind)) return { ...request, reasoning: { ...rest, effort: effortOf(budget) } };
  return budget >= MIN_THINKING_BUDGET_TOKENS ? request : { ...request, reasoning: { ...rest, budgetTokens: MIN_THINKING_BUDGET_TOKENS } };
}

/**
 * Top-k, which Gemini CLI sends on every turn (64), as a sampling hint
 * Chat Completions has no field for: dropped on OpenAI's wire and named,
 * rather than failing every request of that client on an OpenAI target.
 */
function samplingFor(request: ChatRequest, kind: ProviderKind, dropped: string[]): ChatRequest {
  if (!openAiWire(kind) || request.sampling.topK === undefined) return request;
  const { topK: _topK, ...sampling } = request.sampling;
  if (!dropped.includes("generationConfig.topK")) dropped.push("generationConfig.topK");
  return { ...request, sampling };
}

/**
 * A function response that reports a failure (Gemini's `{"error": …}`) on
 * a wire with no failure flag (Chat Completions): the tool message says it
 * in its text, as the caller wrote it, instead of the request being
 * refused for a flag the caller never set.
 */
function toolErrorsFor(request: ChatRequest, kind: ProviderKind): ChatRequest {
  if (!openAiWire(kind) || !request.messages.some((m) => m.isError)) return request;
  return {
    ...request,
    messages: request.messages.map((m) => {
      if (!m.isError) return m;
      const { isError: _flag, ...message } = m;
      return { ...message, content: [{ type: "text" as const, text: JSON.stringify({ error: messageText(m) }) }] };
    }),
  };
}

/** What the edge learns while a call is prepared for its targets. */
export interface TargetFit {
  readonly prepare: (request: ChatRequest, target: RouteTarget) => Promise<ChatRequest>;
  /** The wire of the target last prepared: the one whose answer the caller receives (a failover prepares the next target before its first byte). */
  readonly servedKind: () => ProviderKind | undefined;
  /**
   * Fields left out for the targets prepared so far (Gemini's names): read
   * when the headers are written, after the target is chosen. The same
   * array, filled in place, so the SSE writer reads it at that moment.
   */
  readonly dropped: string[];
}

/**
 * The per-call `prepare` stage of the Gemini edge: the request fitted to
 * each target it is tried on: signatures kept for their own wire, thinking
 * settings, sampling hints and failed tool results in the wire's terms.
 */
export function createTargetFit(droppedByEdge: readonly string[]): TargetFit {
  let served: ProviderKind | undefined;
  const dropped = [...droppedByEdge];
  return {
    prepare: async (request, target) => {
      const kind = target.provider.kind;
      served = kind;
      return samplingFor(thinkingFor(toolErrorsFor(signaturesFor(request, kind), kind), kind), kind, dropped);
    },
    servedKind: () => served,
    dropped,
  };
}
