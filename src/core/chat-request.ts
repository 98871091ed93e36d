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
  /**
   * Tools the provider runs itself (web search, code execution…), as the
   * caller declared them. An offer, not a demand: a target that has neither
   * the tool nor an equivalent goes without it (providers/hosted-tools.ts).
   */
  readonly hostedTools?: readonly HostedTool[];
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
  /** Fields that do not change the answer, carried to targets that take them (carried-params.ts). */
  readonly carried?: CarriedFields;
  /** Per provider kind, a JSON object merged into that provider's request body unchecked. */
  readonly providerOptions?: Readonly<Partial<Record<ProviderKind, Readonly<Record<string, unknown>>>>>;
  /**
   * `auto`: the caller accepts its oldest turns dropped to fit the target's
   * context window (the Responses API's `truncation`), whatever the alias's
   * `context.strategy`. Absent: the alias decides.
   */
  readonly truncation?: "auto";
}

/** The wire formats the gateway speaks upstream; also the keys of `providerOptions`. */
export const PROVIDER_KINDS = ["openai", "anthropic", "gemini", "openai-responses", "azure-openai", "bedrock", "vertex"] as const;
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
  /**
   * Anthropic's `thinking.display`, as the caller sent it: forwarded to
   * Anthropic targets; elsewhere `includeReasoning` already says what it means.
   */
  readonly display?: ThinkingDisplay;
}

export type ThinkingDisplay = "omitted" | "summarized" | "updates";

/**
 * A prompt-cache breakpoint the caller placed (Anthropic's `cache_control`).
 * It changes what the request costs, never what it answers: kept on
 * Anthropic targets, dropped by name on the others (which cache prefixes on
 * their own).
 */
export interface CacheMark {
  readonly ttl?: "5m" | "1h";
}

/**
 * Request fields the gateway does not act on and no answer depends on,
 * carried to the targets whose API takes them and dropped (named in
 * `sluice-dropped-params`) elsewhere: see carried-params.ts.
 */
export interface CarriedFields {
  /** `anthropic-beta` header values an Anthropic target understands. */
  readonly anthropicBetas?: readonly string[];
  /** Anthropic's `context_management` (clearing old thinking and tool results). */
  readonly contextManagement?: Readonly<Record<string, unknown>>;
  /** OpenAI's `prompt_cache_key`: which cache shard a prefix goes to. */
  readonly promptCacheKey?: string;
  /** OpenAI's `safety_identifier`: a hashed end-user id for abuse detection. */
  readonly safetyIdentifier?: string;
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
  /** A tool message's breakpoint (on Anthropic's tool_result block). */
  readonly cache?: CacheMark;
}

export type ContentPart =
  | { readonly type: "text"; readonly text: string; readonly cache?: CacheMark }
  | { readonly type: "image_url"; readonly url: string; readonly detail?: "auto" | "low" | "high"; readonly cache?: CacheMark }
  | ReasoningPart
  | HostedItemPart;

/**
 * The API whose hosted tools a declaration or an item is written for:
 * OpenAI's Responses API (`web_search`, `web_search_call`) or Anthropic's
 * Messages API (`web_search_20250305`, `server_tool_use`), or Gemini (only
 * as a target: its Google Search grounding is what the others map to).
 */
export type HostedOrigin = "openai" | "anthropic" | "gemini";

/**
 * What a hosted tool does, across APIs: how a declaration finds its
 * equivalent on another provider (web search on Anthropic, Google Search
 * grounding on Gemini). `other`: no equivalent anywhere.
 */
export type HostedKind = "web_search" | "web_fetch" | "file_search" | "code_interpreter" | "code_execution" | "image_generation" | "other";

export interface HostedTool {
  /** The declaration's `type` as the caller sent it (`web_search`, `web_search_20250305`): how a drop or refusal names it. */
  readonly type: string;
  readonly kind: HostedKind;
  readonly origin: HostedOrigin;
  /** The whole declaration, settings included (max_uses, filters, user_location), for a target of the same origin. */
  readonly declaration: Readonly<Record<string, unknown>>;
}

/**
 * A hosted tool's call or result from an earlier turn (a `web_search_call`
 * item, a `server_tool_use` or `web_search_tool_result` block), kept as the
 * provider wrote it: only a target of the same origin can take it back.
 */
export interface HostedItemPart {
  readonly type: "hosted_item";
  readonly origin: HostedOrigin;
  readonly item: Readonly<Record<string, unknown>>;
}

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
  readonly cache?: CacheMark;
  /** Anthropic's tool search: the definition is loaded only when the model searches for it. */
  readonly deferLoading?: boolean;
  /** Anthropic's fine-grained tool streaming: input streamed before it is valid JSON. */
  readonly eagerInputStreaming?: boolean;
  /**
   * A freeform tool (Responses `custom`): it takes text, not JSON. Its
   * canonical form is a function with one string parameter, `input`
   * (FREEFORM_PARAMETERS), which every provider can call; a Responses
   * upstream gets it back as a custom tool with its grammar (`format`).
   */
  readonly freeform?: { readonly format?: Readonly<Record<string, unknown>> };
  /**
   * The namespace the caller declared this tool in (Responses `namespace`
   * tools): `name` is then the flat `namespace__member` every provider takes,
   * as Codex flattens them itself.
   */
  readonly namespace?: { readonly name: string; readonly description: string; readonly member: string };
}

/** The parameters of a freeform tool in its canonical form: one string, the text the model writes. */
export const FREEFORM_PARAMETERS: Readonly<Record<string, unknown>> = Object.freeze({
  type: "object",
  properties: { input: { type: "string", description: "The tool's freeform input text." } },
  required: ["input"],
  additionalProperties: false,
});

/** The flat name of a namespaced tool: `namespace__member`, stray underscores at the seam trimmed (Codex's own flat form). */
export function flatToolName(namespace: string, member: string): string {
  return `${namespace.replace(/_+$/, "")}__${member.replace(/^_+/, "")}`;
}

export interface ToolCall {
  readonly id: string;
  readonly name: string;
  /** JSON text, as models produce it. */
  readonly arguments: string;
  /** The provider's signature issued with the call (Gemini thoughtSignature). */
  readonly signature?: string;
  readonly cache?: CacheMark;
}

export type ToolChoice =
  | { readonly type: "auto" }
  | { readonly type: "none" }
  | { readonly type: "required" }
  | { readonly type: "function"; readonly name: string }
  /** A hosted tool the caller forces (by its declared `type`): refused on a target that cannot run it. */
  | { readonly type: "hosted"; readonly tool: string };

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
