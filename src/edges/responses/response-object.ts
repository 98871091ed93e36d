import type { ReasoningEffort, ServiceTier } from "../../core/chat-request.js";

/**
 * The Responses API's `response` object and its output items, as far as
 * this edge produces them. Written out here rather than imported from the
 * openai package (a test-only dependency); test/responses-codec.test.ts
 * checks they are assignable to the SDK's own types.
 */

export type ItemStatus = "in_progress" | "completed" | "incomplete";

export interface OutputText {
  readonly type: "output_text";
  readonly text: string;
  readonly annotations: readonly never[];
  readonly logprobs: readonly never[];
}

export interface MessageOutput {
  readonly type: "message";
  readonly id: string;
  readonly status: ItemStatus;
  readonly role: "assistant";
  readonly content: readonly OutputText[];
}

export interface FunctionCallOutput {
  readonly type: "function_call";
  readonly id: string;
  readonly call_id: string;
  readonly name: string;
  /** The namespace the caller declared the tool in (a `namespace` tool), `name` being the member's own. */
  readonly namespace?: string;
  readonly arguments: string;
  readonly status: ItemStatus;
}

/** A call of a freeform (`custom`) tool: its text in `input`. */
export interface CustomToolCallOutput {
  readonly type: "custom_tool_call";
  readonly id: string;
  readonly call_id: string;
  readonly name: string;
  readonly namespace?: string;
  readonly input: string;
}

/** A hosted web search the provider ran: its own item from a Responses upstream, Anthropic's search call put in these words. */
export interface HostedCallOutput {
  readonly type: "web_search_call";
  readonly id: string;
  readonly status: "in_progress" | "searching" | "completed" | "failed";
  readonly action:
    | { readonly type: "search"; readonly query?: string; readonly queries?: readonly string[]; readonly sources?: readonly { readonly type: "url"; readonly url: string }[] }
    | { readonly type: "open_page"; readonly url?: string | null }
    | { readonly type: "find_in_page"; readonly pattern: string; readonly url: string };
}

export interface SummaryText {
  readonly type: "summary_text";
  readonly text: string;
}

export interface ReasoningOutput {
  readonly type: "reasoning";
  readonly id: string;
  readonly summary: readonly SummaryText[];
  /** The replay envelope (encrypted-reasoning.ts), when the provider issued a signature or withheld a block. */
  readonly encrypted_content?: string;
  readonly status: ItemStatus;
}

/** The tools of an MCP server the gateway listed for the model (its own tool loop, call/gateway-tool-loop.ts). */
export interface McpListToolsOutput {
  readonly type: "mcp_list_tools";
  readonly id: string;
  readonly server_label: string;
  readonly tools: readonly { readonly name: string; readonly description?: string | null; readonly input_schema: unknown; readonly annotations?: unknown }[];
  readonly error?: string | null;
}

/** An MCP tool call the gateway ran for the model: `output` once it returned; `error` the tool's or the protocol's failure. */
export interface McpCallOutput {
  readonly type: "mcp_call";
  readonly id: string;
  readonly server_label: string;
  readonly name: string;
  readonly arguments: string;
  readonly output: string | null;
  /** As a string, the form of the openai SDK this gateway is built against (6.x; 7.x types an object, and parses either). */
  readonly error: string | null;
  readonly approval_request_id: null;
  readonly status: "in_progress" | "calling" | "completed" | "failed" | "incomplete";
}

export type OutputItem = MessageOutput | FunctionCallOutput | CustomToolCallOutput | ReasoningOutput | HostedCallOutput | McpListToolsOutput | McpCallOutput;

/** No `cache_write_tokens`: the canonical usage has no such count (cache writes are inside the input tokens), and 0 would be untrue. */
export interface ResponseUsage {
  readonly input_tokens: number;
  /**
   * cached_tokens: read from the provider's cache. cache_write_tokens (all
   * writes) and its split by lifetime are Sluice extensions, 0 unless the
   * provider reports writes (Anthropic bills them above input).
   */
  readonly input_tokens_details: {
    readonly cached_tokens: number;
    readonly cache_write_tokens: number;
    readonly cache_write_5m_tokens: number;
    readonly cache_write_1h_tokens: number;
  };
  readonly output_tokens: number;
  readonly output_tokens_details: { readonly reasoning_tokens: number };
  readonly total_tokens: number;
  /** Sluice extension: the provider reported no usage and the gateway counted it. */
  readonly estimated?: true;
}

export type WireToolChoice =
  | "auto"
  | "none"
  | "required"
  | { readonly type: "function"; readonly name: string }
  | { readonly type: "custom"; readonly name: string }
  /** A hosted tool, by its declared type (`{"type": "web_search"}`). */
  | { readonly type: string };

export interface WireFunctionTool {
  readonly type: "function";
  readonly name: string;
  readonly description: string | null;
  readonly parameters: Readonly<Record<string, unknown>> | null;
  readonly strict: boolean | null;
}

/** A tool as the request declared it and the response repeats it: function, custom, namespace or hosted. */
export type WireTool = WireFunctionTool | { readonly type: string; readonly [field: string]: unknown };

export type WireTextFormat =
  | { readonly type: "text" }
  | { readonly type: "json_object" }
  | {
      readonly type: "json_schema";
      readonly name: string;
      readonly description?: string;
      readonly schema: Readonly<Record<string, unknown>>;
      readonly strict: boolean | null;
    };

export type ReasoningSummary = "auto" | "concise" | "detailed";

/**
 * The request's own fields that every `response` object repeats, in the
 * Responses API's words and with its defaults filled in; the decoder builds
 * it, the encoder copies it.
 */
export interface ResponseEcho {
  readonly instructions: string | null;
  readonly max_output_tokens: number | null;
  readonly metadata: Readonly<Record<string, string>>;
  readonly parallel_tool_calls: boolean;
  readonly temperature: number | null;
  readonly top_p: number | null;
  readonly tool_choice: WireToolChoice;
  readonly tools: readonly WireTool[];
  readonly text: { readonly format: WireTextFormat };
  readonly reasoning: { readonly effort: ReasoningEffort | null; readonly summary: ReasoningSummary | null };
  readonly service_tier?: ServiceTier;
  readonly user?: string;
  readonly safety_identifier?: string;
  readonly prompt_cache_key?: string;
  /** Absent: false, as the edge answers where it keeps nothing. */
  readonly store?: boolean;
  readonly previous_response_id?: string | null;
  readonly truncation?: "auto" | "disabled";
  /** The conversation the response was appended to (`conversation` on the request). */
  readonly conversation?: { readonly id: string };
}

export type ResponseStatus = "in_progress" | "completed" | "incomplete" | "failed";

export interface ResponseObject extends ResponseEcho {
  readonly id: string;
  readonly object: "response";
  readonly created_at: number;
  readonly completed_at: number | null;
  readonly status: ResponseStatus;
  /** The `error` event after response.failed carries the gateway's own code; this one is from the Responses API's list. */
  readonly error: { readonly code: "server_error" | "rate_limit_exceeded"; readonly message: string } | null;
  readonly incomplete_details: { readonly reason: "max_output_tokens" | "content_filter" } | null;
  readonly model: string;
  readonly output: readonly OutputItem[];
  /** Absent until the provider (or the gateway's count) said. */
  readonly usage?: ResponseUsage;
  /** Whether the gateway keeps it (GET /v1/responses/{id}, previous_response_id; a background run always). */
  readonly store: boolean;
  readonly background: boolean;
  readonly previous_response_id: string | null;
  readonly truncation: "auto" | "disabled";
}

/** The echo of a request that set none of these fields: the Responses API's defaults. */
export const DEFAULT_ECHO: ResponseEcho = {
  instructions: null,
  max_output_tokens: null,
  metadata: {},
  parallel_tool_calls: true,
  temperature: null,
  top_p: null,
  tool_choice: "auto",
  tools: [],
  text: { format: { type: "text" } },
  reasoning: { effort: null, summary: null },
};
