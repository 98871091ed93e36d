/**
 * The canonical, validated request inside the gateway. Edges build it from
 * their wire format (protobuf, OpenAI JSON) and adapters build provider
 * requests from it, so neither side depends on the other's shape.
 */
export interface ChatRequest {
  /** Model alias as the client named it. */
  readonly model: string;
  readonly messages: readonly ChatMessage[];
  readonly tools: readonly ToolDefinition[];
  readonly toolChoice?: ToolChoice;
  readonly sampling: Sampling;
  readonly metadata: RequestMetadata;
  /** Absent: free text, the provider's default. */
  readonly responseFormat?: ResponseFormat;
  /** Absent: nothing about reasoning is sent upstream. */
  readonly reasoning?: ReasoningOptions;
  /** Present: return token log probabilities, with this many alternatives per token. */
  readonly logprobs?: { readonly topLogprobs?: number };
  readonly parallelToolCalls?: boolean;
  readonly serviceTier?: ServiceTier;
  /** Per provider kind, a JSON object merged into that provider's request body unchecked. */
  readonly providerOptions?: Readonly<Partial<Record<ProviderKind, Readonly<Record<string, unknown>>>>>;
}

/** The wire formats the gateway speaks upstream; also the keys of `providerOptions`. */
export const PROVIDER_KINDS = ["openai", "anthropic", "gemini"] as const;
export type ProviderKind = (typeof PROVIDER_KINDS)[number];

export type ResponseFormat =
  | { readonly type: "text" }
  | { readonly type: "json_object" }
  | {
      readonly type: "json_schema";
      readonly name: string;
      readonly description?: string;
      readonly schema: Readonly<Record<string, unknown>>;
      readonly strict?: boolean;
    };

export type ReasoningEffort = "none" | "minimal" | "low" | "medium" | "high" | "xhigh";

/** The smallest thinking budget Anthropic accepts (budget_tokens); the Messages edge and the Anthropic adapter hold requests to it. */
export const MIN_THINKING_BUDGET_TOKENS = 1024;

export interface ReasoningOptions {
  readonly effort?: ReasoningEffort;
  readonly budgetTokens?: number;
  /** false: reasoning text is never forwarded; undefined: as the provider returns it. */
  readonly includeReasoning?: boolean;
}

export type ServiceTier = "auto" | "default" | "flex" | "priority" | "scale";

export type Role = "system" | "user" | "assistant" | "tool";

export interface ChatMessage {
  readonly role: Role;
  readonly content: readonly ContentPart[];
  readonly toolCallId?: string;
  readonly toolCalls?: readonly ToolCall[];
  readonly name?: string;
  /**
   * A tool message whose result reports a failure (Anthropic's `is_error`).
   * Said apart from the text because models treat a failed call differently
   * from a result, and not every provider has a field for it.
   */
  readonly isError?: boolean;
}

export type ContentPart =
  | { readonly type: "text"; readonly text: string }
  | { readonly type: "image_url"; readonly url: string; readonly detail?: "auto" | "low" | "high" }
  | ReasoningPart;

/**
 * Reasoning from an earlier assistant turn, kept with the provider's
 * signature so the turn can be replayed: providers verify the signature
 * against the text, and refuse tool-use continuations without it.
 */
export interface ReasoningPart {
  readonly type: "reasoning";
  readonly text: string;
  readonly signature?: string;
  /** Encrypted reasoning the provider withheld (Anthropic redacted_thinking). */
  readonly redactedData?: string;
}

export interface ToolDefinition {
  readonly name: string;
  readonly description: string;
  /** JSON Schema object, passed to providers as is. */
  readonly parameters: Readonly<Record<string, unknown>>;
  readonly strict?: boolean;
}

export interface ToolCall {
  readonly id: string;
  readonly name: string;
  /** JSON text, as models produce it. */
  readonly arguments: string;
  /** The provider's signature issued with the call (Gemini thoughtSignature). */
  readonly signature?: string;
}

export type ToolChoice =
  | { readonly type: "auto" }
  | { readonly type: "none" }
  | { readonly type: "required" }
  | { readonly type: "function"; readonly name: string };

export interface Sampling {
  readonly temperature?: number;
  readonly topP?: number;
  /** Sample from the k most likely tokens only (Anthropic and Gemini have it, OpenAI does not). */
  readonly topK?: number;
  readonly maxTokens?: number;
  readonly stop: readonly string[];
  readonly seed?: number;
  readonly presencePenalty?: number;
  readonly frequencyPenalty?: number;
  /** Token id (decimal string) → bias. */
  readonly logitBias?: Readonly<Record<string, number>>;
}

export interface RequestMetadata {
  readonly userId?: string;
  readonly sessionId?: string;
  readonly labels: Readonly<Record<string, string>>;
  /** Sent to providers that store key-value metadata with a request (OpenAI). */
  readonly providerMetadata?: Readonly<Record<string, string>>;
}

/** Concatenated text parts of a message, for providers and logs that want plain text. */
export function messageText(message: ChatMessage): string {
  let text = "";
  for (const part of message.content) if (part.type === "text") text += part.text;
  return text;
}
