import type { CallToolResult, GetPromptResult, Progress, Prompt, ReadResourceResult, Resource, Tool } from "@modelcontextprotocol/sdk/types.js";
import type { LevelSettings, TeamSettings } from "../config/config.js";
import type { McpGrant } from "../config/mcp-schema.js";
import type { Principal } from "../tenancy/principal.js";

/**
 * The MCP gateway's parts and how they meet. Four rooms of mcp/ build
 * against these types: the upstream side (mcp/upstream/: connections to
 * the servers, their cached listings), grants (mcp/grants.ts: who sees
 * what), accounting (mcp/accounting/: limits, budgets, ledger, audit,
 * metrics of a tool call) and the toolbox (mcp/toolbox.ts: the one place
 * a caller's list or call passes every check, in one order), which the
 * `/mcp` edge (edges/mcp/) and the model-call tool loop both use.
 */

/** Separates a server's name from its tool's or prompt's name; server names never contain it (config/mcp-schema.ts). */
export const NAME_SEPARATOR = "_";

/** The longest tool name clients accept (SEP-986); a server's tool whose exposed name would be longer is left out and counted. */
export const MAX_TOOL_NAME_CHARS = 128;

/** Request headers by which a caller narrows its own grants for one request (never widens them): comma-separated globs / server names. */
export const NARROW_TOOLS_HEADER = "sluice-mcp-tools";
export const NARROW_SERVERS_HEADER = "sluice-mcp-servers";

/** A tool as callers see it: `definition.name` is `<server>_<tool>`. */
export interface ExposedTool {
  readonly name: string;
  readonly server: string;
  /** The server's own name for it. */
  readonly upstreamName: string;
  readonly definition: Tool;
}

/** A prompt as callers see it: `definition.name` is `<server>_<prompt>`. */
export interface ExposedPrompt {
  readonly name: string;
  readonly server: string;
  readonly upstreamName: string;
  readonly definition: Prompt;
}

/** A resource as callers see it: its URI as the server gave it (a read finds the server by it). */
export interface ExposedResource {
  readonly server: string;
  readonly definition: Resource;
}

/** How one server is doing, for `/readyz` details and the console. */
export interface ServerHealth {
  readonly state: "up" | "starting" | "down" | "breaker_open";
  readonly transport: "http" | "stdio";
  /** Tools in its current listing (after bounds). */
  readonly tools: number;
  /** What the last failure was, without secrets. */
  readonly lastError?: string;
  /** stdio: restarts within the current window. */
  readonly restarts?: number;
}

/** What a call to a server carries besides its arguments. */
export interface UpstreamCallOptions {
  readonly signal: AbortSignal;
  /** The upstream session this caller's `Mcp-Session-Id` sealed for the server, when it has one. */
  readonly sessionId?: string;
  /** Progress notifications from the server, passed to the caller (they also extend the server's timeout). */
  readonly onProgress?: (progress: Progress) => void;
  /** Bearer token for this caller at this server (per-user OAuth), never the caller's own key. */
  readonly bearer?: string;
}

/**
 * The upstream side, one per gateway process (mcp/upstream/). Listings are
 * cached per server (`mcp.listCacheMs`; `notifications/tools/list_changed`
 * ends a server's at once) and bounded (`maxTools`, `maxSchemaBytes`,
 * `maxSchemaDepth`); answers are bounded by `mcp.maxResultBytes`. Every
 * failure is a McpError (below).
 */
export interface McpUpstreams {
  /** Configured server names. */
  readonly servers: readonly string[];
  tools(server: string, signal: AbortSignal): Promise<readonly ExposedTool[]>;
  prompts(server: string, signal: AbortSignal): Promise<readonly ExposedPrompt[]>;
  resources(server: string, signal: AbortSignal): Promise<readonly ExposedResource[]>;
  callTool(server: string, tool: string, args: Record<string, unknown>, options: UpstreamCallOptions): Promise<CallToolResult>;
  getPrompt(server: string, prompt: string, args: Record<string, string>, options: UpstreamCallOptions): Promise<GetPromptResult>;
  readResource(server: string, uri: string, options: UpstreamCallOptions): Promise<ReadResourceResult>;
  /**
   * Opens one upstream session per named HTTP server for a new caller
   * session (stdio servers have none: one process per replica serves
   * everyone); what it returns is sealed into the caller's session id so
   * that any replica continues it. A server that fails is left out (its
   * calls then run without a session).
   */
  openSessions(servers: readonly string[], signal: AbortSignal): Promise<Record<string, string>>;
  health(): Record<string, ServerHealth>;
  /** Called when a server's tool listing changed (its notification, or a reconnect). */
  onListChanged(listener: (server: string) => void): () => void;
  close(): Promise<void>;
}

/** Who asks, with the levels above it: grants intersect down from the business line to the key. */
export interface McpCaller {
  /** Absent while authentication is off: then every tool is granted. */
  readonly principal?: Principal;
  readonly team?: TeamSettings;
  readonly businessLine?: LevelSettings;
  /** From NARROW_*_HEADER: may only narrow. */
  readonly narrow?: McpGrant;
  /** The caller's `Mcp-Session-Id`, opened: the upstream session per server. */
  readonly upstreamSessions?: Readonly<Record<string, string>>;
}

/** The one predicate `tools/list` and `tools/call` (and the model-call loop) all ask. */
export interface ToolGrants {
  /** Whether the caller may see anything of `server` (its prompts and resources too). */
  server(server: string): boolean;
  /** Whether the caller may see and call the exposed tool `name` of `server`. */
  tool(server: string, name: string): boolean;
}

/** JSON-RPC error codes the gateway answers with (the spec's, and ours in the server-error range). */
export const MCP_ERRORS = {
  invalidParams: -32602,
  methodNotFound: -32601,
  internal: -32603,
  /** Not granted, or unknown: the same answer, so a caller cannot probe for tools it may not see. */
  toolNotFound: -32602,
  /** Budget or limit: `data.status` 402 / 429 as for models. */
  refused: -32001,
  upstreamFailed: -32002,
  timeout: -32003,
  tooLarge: -32004,
  blocked: -32005,
} as const;

/** A failure of an MCP operation, with the JSON-RPC code to answer and the gateway's HTTP-ish status for logs and metrics. */
export class McpError extends Error {
  constructor(
    readonly code: number,
    message: string,
    readonly data?: Readonly<Record<string, unknown>>,
  ) {
    super(message);
    this.name = "McpError";
  }
}

/** What a tool call is, for its charge and its audit event. */
export interface ToolCallFacts {
  readonly server: string;
  /** Exposed name. */
  readonly tool: string;
  readonly upstreamTool: string;
  /** SHA-256 (hex) of the canonical JSON of the arguments as the caller sent them. */
  readonly argumentsSha256: string;
  /** The arguments after PII redaction, when the tool opts in (`auditArguments`). */
  readonly auditArguments?: unknown;
  /** USD, from the tool's or server's `price.perCall`. */
  readonly priceUsd: number;
  /** Where the call came from: the `/mcp` edge, or a model call's tool loop. */
  readonly via: "mcp" | "responses" | "messages" | "grpc";
  /** The call's id when it has one (a model's tool-call id in the tool loop; the JSON-RPC request id at `/mcp`): the span's `gen_ai.tool.call.id`, the ledger's request id. */
  readonly callId?: string;
}

export type ToolCallOutcome = "ok" | "tool_error" | "failed" | "timeout" | "canceled" | "too_large";

export interface ToolCallSettlement {
  readonly outcome: ToolCallOutcome;
  readonly durationMs: number;
  readonly resultBytes: number;
  readonly errorMessage?: string;
}

/** An admitted call: settled once, whatever happened. */
export interface ToolCallCharge {
  settle(settlement: ToolCallSettlement): void;
}

/**
 * A tool call's bookkeeping (mcp/accounting/): admission under the key's
 * (team's, business line's) request limits and budgets, with the same
 * refusals as a model call (thrown as McpError `refused`, `data.status`
 * 402 or 429); then, settled, the ledger record (`kind: tool`), the spend,
 * the audit event, metrics and the span.
 */
export interface ToolAccounting {
  admit(caller: McpCaller, facts: ToolCallFacts, signal: AbortSignal): Promise<ToolCallCharge>;
}

/** Options of one toolbox call. */
export interface ToolboxCallOptions {
  readonly signal: AbortSignal;
  readonly onProgress?: (progress: Progress) => void;
  readonly via: ToolCallFacts["via"];
  /** The id the caller or the model gave the call (a JSON-RPC request id, a model's function call id): the span's `gen_ai.tool.call.id`. */
  readonly callId?: string;
}

/**
 * What a caller can do with MCP, every check in one order (mcp/toolbox.ts):
 * grants → argument constraints → PII policy (redact arguments, restore
 * results; `block` refuses) → admission (limits, budgets) → the call
 * (bounded) → settlement (ledger, audit, metrics). Failures are McpError.
 */
export interface McpToolbox {
  listTools(caller: McpCaller, signal: AbortSignal): Promise<readonly ExposedTool[]>;
  callTool(caller: McpCaller, name: string, args: Record<string, unknown>, options: ToolboxCallOptions): Promise<CallToolResult>;
  listPrompts(caller: McpCaller, signal: AbortSignal): Promise<readonly ExposedPrompt[]>;
  getPrompt(caller: McpCaller, name: string, args: Record<string, string>, signal: AbortSignal): Promise<GetPromptResult>;
  listResources(caller: McpCaller, signal: AbortSignal): Promise<readonly ExposedResource[]>;
  readResource(caller: McpCaller, uri: string, signal: AbortSignal): Promise<ReadResourceResult>;
}
