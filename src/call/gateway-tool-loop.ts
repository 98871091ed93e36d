import type { CallToolResult } from "@modelcontextprotocol/sdk/types.js";
import type { ChatMessage, ChatRequest, ContentPart, ToolCall, ToolDefinition } from "../core/chat-request.js";
import { quoteClientValue } from "../core/client-text.js";
import type { Delta, GatewayToolInfo, Usage } from "../core/delta.js";
import { GatewayError } from "../core/errors.js";
import type { ExposedTool, McpCaller, McpToolbox, ToolCallFacts } from "../mcp/contract.js";
import { McpError } from "../mcp/contract.js";

/** One MCP server a request asks the gateway to run tools of (a Responses `mcp` tool, a Messages `mcp_servers` entry). */
export interface GatewayToolServer {
  /** Its name in `mcp.servers`: the request's `server_label` / `name`. */
  readonly server: string;
  /** The server's own tool names the request allows; absent: every tool granted to the caller. */
  readonly allowedTools?: readonly string[];
  /** Where the request named it (`tools[2].server_label`), for the refusal of an unknown one. */
  readonly field: string;
}

/** What an edge asks of the call layer for a request with gateway-run tools. */
export interface GatewayToolsRequest {
  readonly servers: readonly GatewayToolServer[];
  readonly via: Exclude<ToolCallFacts["via"], "mcp">;
}

/** What the loop stands on, given by the composition (app.ts). */
export interface GatewayToolsDeps {
  /** Read per call: the composition makes it after the call layer (the `/mcp` edge builds it); absent, no server is served. */
  readonly toolbox: () => McpToolbox | undefined;
  /** The servers configured now (`mcp.servers`): any other name is refused, so the gateway never calls a URL a request brings. */
  readonly servers: () => readonly string[];
  /** Who asks, with the levels above the key, for the toolbox's grants. */
  readonly caller: (principal: McpCaller["principal"]) => McpCaller;
  /** Rounds of tool calls before the model is asked to answer without tools (default MAX_GATEWAY_TOOL_ROUNDS). */
  readonly maxRounds?: number;
}

/** Rounds of gateway-run tool calls in one model call: a model that keeps calling is then asked for its answer with tool choice `none`. */
export const MAX_GATEWAY_TOOL_ROUNDS = 8;

/** One model turn, run through the pipeline (each turn is a model call of its own: limits, budget, ledger). */
export type RunTurn = (request: ChatRequest, turn: number) => AsyncIterable<Delta>;

/** One loop's parts besides its first request. */
export interface GatewayToolLoop {
  readonly use: GatewayToolsRequest;
  /** Absent where no toolbox is served: every server is then unknown, and refused. */
  readonly served: GatewayToolsDeps | undefined;
  readonly principal: McpCaller["principal"];
  /** The client's: aborts the turn under way and the tool call under way. */
  readonly signal: AbortSignal;
  readonly runTurn: RunTurn;
}

interface PendingCall {
  id: string;
  name: string;
  arguments: string;
  signature?: string;
  readonly gateway: ExposedTool | undefined;
}

/** Refuses a server the configuration does not name, by name, before anything is listed. */
export function checkServers(use: GatewayToolsRequest, configured: readonly string[]): void {
  for (const s of use.servers) {
    if (!configured.includes(s.server)) {
      throw new GatewayError("invalid_request", `${s.field}: MCP server ${quoteClientValue(s.server, 64)} is not registered on this gateway (mcp.servers): the gateway calls only the servers it is configured with`, {
        field: s.field,
      });
    }
  }
}

function addUsage(total: Usage | undefined, next: Usage): Usage {
  if (!total) return next;
  const sum = (a: number | undefined, b: number | undefined) => (a === undefined && b === undefined ? undefined : (a ?? 0) + (b ?? 0));
  const optional = (key: "cacheWrite5mTokens" | "cacheWrite1hTokens" | "webSearches") => {
    const value = sum(total[key], next[key]);
    return value === undefined ? {} : { [key]: value };
  };
  return {
    inputTokens: total.inputTokens + next.inputTokens,
    outputTokens: total.outputTokens + next.outputTokens,
    cachedInputTokens: total.cachedInputTokens + next.cachedInputTokens,
    reasoningTokens: total.reasoningTokens + next.reasoningTokens,
    ...optional("cacheWrite5mTokens"),
    ...optional("cacheWrite1hTokens"),
    ...optional("webSearches"),
    requests: (total.requests ?? 1) + (next.requests ?? 1),
    ...(total.estimated || next.estimated ? { estimated: true } : {}),
  };
}

/** A tool result as the text the model reads and the caller sees: its text parts, other parts as JSON. */
export function resultText(result: CallToolResult): string {
  const parts = result.content.map((part) => (part.type === "text" ? part.text : JSON.stringify(part)));
  if (parts.length === 0 && result.structuredContent !== undefined) return JSON.stringify(result.structuredContent);
  return parts.join("\n");
}

function infoOf(tool: ExposedTool): GatewayToolInfo {
  const d = tool.definition;
  return {
    name: tool.upstreamName,
    ...(d.description === undefined ? {} : { description: d.description }),
    inputSchema: d.inputSchema as Record<string, unknown>,
    ...(d.annotations === undefined ? {} : { annotations: d.annotations as Record<string, unknown> }),
  };
}

function definitionOf(tool: ExposedTool): ToolDefinition {
  return { name: tool.name, description: tool.definition.description ?? "", parameters: tool.definition.inputSchema as Record<string, unknown> };
}

function parsedArguments(text: string): Record<string, unknown> | undefined {
  try {
    const value = JSON.parse(text === "" ? "{}" : text) as unknown;
    return value !== null && typeof value === "object" && !Array.isArray(value) ? (value as Record<string, unknown>) : undefined;
  } catch {
    return undefined;
  }
}

/**
 * A model call whose request asked the gateway to run an MCP server's
 * tools: the caller's granted tools of those servers (listed through the
 * toolbox, so exactly what `/mcp` would list to this key) are declared to
 * the model as functions; each call the model makes to one of them is run
 * through the toolbox (grants, argument constraints, PII, limits, budget,
 * ledger, audit: the same as a `tools/call`), its result fed back, and the
 * model asked again, up to `maxRounds` rounds. The caller sees one answer:
 * the first turn's start, every turn's content, the gateway's tool events
 * (GatewayToolDelta) where the calls happened, the usage of all turns
 * summed, and the last turn's finish. Function calls of the caller's own
 * tools pass through; a turn that has any ends the loop, for the caller to
 * answer them.
 */
export async function* gatewayToolLoop(request: ChatRequest, loop: GatewayToolLoop): AsyncGenerator<Delta, void, undefined> {
  const { use, signal, runTurn } = loop;
  const toolbox = loop.served?.toolbox();
  checkServers(use, toolbox ? loop.served!.servers() : []);
  const deps = loop.served!;
  const caller = callerOf(deps, loop.principal);
  const granted = await listed(toolbox!, caller, signal);
  const exposed = new Map<string, ExposedTool>();
  const listings: Delta[] = [];
  for (const s of use.servers) {
    const tools = granted.filter((t) => t.server === s.server && (s.allowedTools === undefined || s.allowedTools.includes(t.upstreamName)));
    for (const t of tools) exposed.set(t.name, t);
    listings.push({ type: "gateway_tool", event: { kind: "list", server: s.server, tools: tools.map(infoOf) } });
  }
  const declared = request.tools.filter((t) => !exposed.has(t.name));
  let next: ChatRequest = { ...request, tools: [...declared, ...[...exposed.values()].map(definitionOf)] };
  const maxRounds = deps.maxRounds ?? MAX_GATEWAY_TOOL_ROUNDS;
  let usage: Usage | undefined;
  for (let round = 0; ; round++) {
    if (round === maxRounds) next = { ...next, toolChoice: { type: "none" } };
    const calls = new Map<number, PendingCall>();
    const content: ContentPart[] = [];
    let reasoning: { text: string } | undefined;
    let text = "";
    let finish: Delta | undefined;
    for await (const delta of runTurn(next, round)) {
      switch (delta.type) {
        case "start":
          if (round === 0) {
            yield delta;
            yield* listings;
          }
          break;
        case "usage":
          usage = addUsage(usage, delta);
          break;
        case "finish":
          finish = delta;
          break;
        case "text":
          text += delta.text;
          yield delta;
          break;
        case "reasoning":
          if (delta.redactedData !== undefined) content.push({ type: "reasoning", text: "", redactedData: delta.redactedData });
          else {
            reasoning ??= { text: "" };
            reasoning.text += delta.text;
            if (delta.signature !== undefined) {
              content.push({ type: "reasoning", text: reasoning.text, signature: delta.signature });
              reasoning = undefined;
            }
          }
          yield delta;
          break;
        case "tool_call": {
          let call = calls.get(delta.index);
          if (!call) {
            call = { id: delta.id ?? "", name: delta.name ?? "", arguments: "", gateway: delta.name === undefined ? undefined : exposed.get(delta.name) };
            calls.set(delta.index, call);
          }
          if (delta.id) call.id = delta.id;
          if (delta.signature !== undefined) call.signature = delta.signature;
          call.arguments += delta.arguments;
          // The caller's own tools are its to answer; the gateway's are run here and shown as its own items.
          if (!call.gateway) yield delta;
          break;
        }
        default:
          yield delta;
      }
    }
    if (reasoning) content.push({ type: "reasoning", text: reasoning.text });
    const gatewayCalls = [...calls.values()].filter((c) => c.gateway !== undefined);
    if (finish === undefined || gatewayCalls.length === 0) {
      if (usage) yield { type: "usage", ...usage };
      if (finish) yield finish;
      return;
    }
    if (text !== "") content.push({ type: "text", text });
    const toolCalls: ToolCall[] = [...calls.values()].map((c) => ({ id: c.id, name: c.name, arguments: c.arguments, ...(c.signature === undefined ? {} : { signature: c.signature }) }));
    const results: ChatMessage[] = [];
    for (const call of gatewayCalls) {
      const tool = call.gateway!;
      yield { type: "gateway_tool", event: { kind: "call", id: call.id, server: tool.server, tool: tool.upstreamName, arguments: call.arguments } };
      const outcome = await runOne(toolbox!, caller, tool, call.id, call.arguments, use.via, signal);
      yield { type: "gateway_tool", event: { kind: "result", id: call.id, server: tool.server, tool: tool.upstreamName, ...outcome } };
      // The failure is in the text (the tool's own content, or the gateway's "error: …"), not in `isError`: OpenAI-kind targets have no field for it and would refuse the turn.
      results.push({ role: "tool", toolCallId: call.id, name: tool.name, content: [{ type: "text", text: outcome.output }] });
    }
    if (gatewayCalls.length < calls.size) {
      // The caller's own calls wait for its answer: this response ends here, as a model's would.
      if (usage) yield { type: "usage", ...usage };
      yield finish;
      return;
    }
    next = { ...next, messages: [...next.messages, { role: "assistant", content, toolCalls }, ...results] };
  }
}

/** Who asks, with its levels; a key whose level is gone is refused as at `/mcp` (its grants would otherwise widen). */
function callerOf(deps: GatewayToolsDeps, principal: McpCaller["principal"]): McpCaller {
  try {
    return deps.caller(principal);
  } catch (error) {
    if (error instanceof McpError) throw new GatewayError("permission_denied", error.message, { cause: error });
    throw error;
  }
}

/** The caller's granted tools; a listing that fails fails the call (the model cannot be asked without its tools). */
async function listed(toolbox: McpToolbox, caller: McpCaller, signal: AbortSignal): Promise<readonly ExposedTool[]> {
  try {
    return await toolbox.listTools(caller, signal);
  } catch (error) {
    if (!(error instanceof McpError) || signal.aborted) throw error;
    throw new GatewayError("upstream_unavailable", `listing the MCP tools failed: ${error.message}`, { cause: error });
  }
}

/** One gateway-run call through the toolbox: the tool's failure and the gateway's refusal both go back to the model as an error result. */
async function runOne(
  toolbox: McpToolbox,
  caller: McpCaller,
  tool: ExposedTool,
  callId: string,
  argumentsText: string,
  via: GatewayToolsRequest["via"],
  signal: AbortSignal,
): Promise<{ readonly output: string; readonly isError: boolean; readonly failure?: { readonly code: number; readonly message: string } }> {
  const args = parsedArguments(argumentsText);
  if (args === undefined) {
    const message = "the arguments are not a JSON object";
    return { output: `error: ${message}`, isError: true, failure: { code: -32602, message } };
  }
  try {
    const result = await toolbox.callTool(caller, tool.name, args, { signal, via, callId });
    return { output: resultText(result), isError: result.isError === true };
  } catch (error) {
    if (!(error instanceof McpError) || signal.aborted) throw error;
    return { output: `error: ${error.message}`, isError: true, failure: { code: error.code, message: error.message } };
  }
}
