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
}

export type Role = "system" | "user" | "assistant" | "tool";

export interface ChatMessage {
  readonly role: Role;
  readonly content: readonly ContentPart[];
  readonly toolCallId?: string;
  readonly toolCalls?: readonly ToolCall[];
  readonly name?: string;
}

export type ContentPart =
  | { readonly type: "text"; readonly text: string }
  | { readonly type: "image_url"; readonly url: string; readonly detail?: "auto" | "low" | "high" };

export interface ToolDefinition {
  readonly name: string;
  readonly description: string;
  /** JSON Schema object, passed to providers as is. */
  readonly parameters: Readonly<Record<string, unknown>>;
}

export interface ToolCall {
  readonly id: string;
  readonly name: string;
  /** JSON text, as models produce it. */
  readonly arguments: string;
}

export type ToolChoice =
  | { readonly type: "auto" }
  | { readonly type: "none" }
  | { readonly type: "required" }
  | { readonly type: "function"; readonly name: string };

export interface Sampling {
  readonly temperature?: number;
  readonly topP?: number;
  readonly maxTokens?: number;
  readonly stop: readonly string[];
  readonly seed?: number;
}

export interface RequestMetadata {
  readonly userId?: string;
  readonly sessionId?: string;
  readonly labels: Readonly<Record<string, string>>;
}

/** Concatenated text parts of a message, for providers and logs that want plain text. */
export function messageText(message: ChatMessage): string {
  let text = "";
  for (const part of message.content) if (part.type === "text") text += part.text;
  return text;
}
