import type { CallToolResult } from "@modelcontextprotocol/sdk/types.js";
import type { RequestPolicy } from "../compliance/pii-policy.js";
import type { McpSettings } from "../config/mcp-schema.js";
import { compileArgumentConstraints } from "./argument-constraints.js";
import {
  type ExposedPrompt,
  type ExposedResource,
  type ExposedTool,
  MCP_ERRORS,
  type McpCaller,
  McpError,
  type McpToolbox,
  type McpUpstreams,
  NAME_SEPARATOR,
  type ToolAccounting,
  type ToolCallOutcome,
  type ToolGrants,
} from "./contract.js";
import { auditView, screenArguments } from "./tool-pii.js";

/** What the toolbox is built from: the other rooms of mcp/, injected so each is tested on its own. */
export interface ToolboxDeps {
  readonly settings: McpSettings;
  readonly upstreams: McpUpstreams;
  /** mcp/grants.ts's toolGrants: the one predicate listing and calling both ask. */
  readonly grants: (caller: McpCaller) => ToolGrants;
  readonly accounting: ToolAccounting;
  /** The caller's key's and team's PII policy (compliance/pii-policy.ts's policyFor, with no model route). */
  readonly piiPolicy: (caller: McpCaller) => RequestPolicy;
  /** mcp/accounting's canonicalArgumentsSha256. */
  readonly argumentsSha256: (args: unknown) => string;
  /** mcp/credentials' credentialFor: the caller's own token at a per-key server (absent: every server is static). */
  readonly credentialFor?: (keyId: string | undefined, server: string) => Promise<string | undefined>;
  readonly now?: () => number;
}

/** The same answer for a tool that does not exist and one the caller may not see: nothing to probe with. */
function toolNotFound(name: string): McpError {
  return new McpError(MCP_ERRORS.toolNotFound, `unknown tool: ${name.slice(0, 160)}`);
}

/** The server an exposed name belongs to: the part before the first separator (server names have none). */
function serverOf(name: string): string | undefined {
  const at = name.indexOf(NAME_SEPARATOR);
  return at > 0 ? name.slice(0, at) : undefined;
}

/** How a failed call is settled: by the McpError's code, or `canceled` when the caller went away. */
function outcomeOf(error: unknown, signal: AbortSignal): ToolCallOutcome {
  if (signal.aborted) return "canceled";
  if (error instanceof McpError) {
    if (error.code === MCP_ERRORS.timeout) return "timeout";
    if (error.code === MCP_ERRORS.tooLarge) return "too_large";
  }
  return "failed";
}

/** One granted server's listing, or none when it is down: one server failing does not empty everyone's list. */
async function settledFlat<T>(lists: readonly Promise<readonly T[]>[]): Promise<T[]> {
  const settled = await Promise.allSettled(lists);
  return settled.flatMap((s) => (s.status === "fulfilled" ? s.value : []));
}

/**
 * The one place an MCP operation passes every check, in one order, for the
 * `/mcp` edge and the model-call tool loop alike: grants (the same
 * predicate for list and call; an ungranted tool and an unknown one get
 * the same refusal, before anything is forwarded) → the operator's
 * argument constraint → the PII policy (redact out, restore back; `block`
 * refuses) → admission (limits, budgets) → the call → settlement (ledger,
 * audit, metrics), once, however it ended.
 */
export function createMcpToolbox(deps: ToolboxDeps): McpToolbox {
  const { upstreams, settings } = deps;
  const now = deps.now ?? Date.now;
  const checkArguments = compileArgumentConstraints(settings.servers);
  const grantedServers = (grants: ToolGrants) => upstreams.servers.filter((s) => grants.server(s));
  /** The upstream options' bearer: the caller's key's own token at a per-key server, never anything of the caller's request. */
  const bearerFor = async (caller: McpCaller, server: string): Promise<{ bearer?: string }> => {
    const bearer = await deps.credentialFor?.(caller.principal?.id, server);
    return bearer === undefined ? {} : { bearer };
  };

  const listTools = async (caller: McpCaller, signal: AbortSignal) => {
    const grants = deps.grants(caller);
    const lists = grantedServers(grants).map(async (s) => (await upstreams.tools(s, signal)).filter((t) => grants.tool(s, t.name)));
    return settledFlat<ExposedTool>(lists);
  };

  /** The exposed tool `name` if the caller may call it; toolNotFound otherwise, asked before any listing is fetched. */
  const grantedTool = async (caller: McpCaller, name: string, signal: AbortSignal): Promise<ExposedTool> => {
    const server = serverOf(name);
    const grants = deps.grants(caller);
    if (server === undefined || !upstreams.servers.includes(server) || !grants.server(server) || !grants.tool(server, name)) throw toolNotFound(name);
    const tool = (await upstreams.tools(server, signal)).find((t) => t.name === name);
    if (!tool) throw toolNotFound(name);
    return tool;
  };

  return {
    listTools,

    async callTool(caller, name, args, options) {
      const tool = await grantedTool(caller, name, options.signal);
      checkArguments(tool.server, tool.upstreamName, args);
      const screened = screenArguments(args, deps.piiPolicy(caller));
      // Before admission: a key with no token at a per-key server is refused without a charge.
      const bearer = await bearerFor(caller, tool.server);
      const server = settings.servers[tool.server];
      const toolSettings = server?.tools?.[tool.upstreamName];
      const charge = await deps.accounting.admit(
        caller,
        {
          server: tool.server,
          tool: tool.name,
          upstreamTool: tool.upstreamName,
          argumentsSha256: deps.argumentsSha256(args),
          ...(toolSettings?.auditArguments ? { auditArguments: auditView(args) } : {}),
          priceUsd: toolSettings?.price?.perCall ?? server?.price?.perCall ?? 0,
          via: options.via,
          ...(options.callId === undefined ? {} : { callId: options.callId }),
        },
        options.signal,
      );
      const started = now();
      let result: CallToolResult;
      try {
        const sessionId = caller.upstreamSessions?.[tool.server];
        result = await upstreams.callTool(tool.server, tool.upstreamName, screened.args, {
          signal: options.signal,
          ...(sessionId ? { sessionId } : {}),
          ...bearer,
          ...(options.onProgress ? { onProgress: options.onProgress } : {}),
        });
      } catch (error) {
        charge.settle({ outcome: outcomeOf(error, options.signal), durationMs: now() - started, resultBytes: 0, errorMessage: error instanceof McpError ? error.message : "the call failed" });
        throw error;
      }
      charge.settle({ outcome: result.isError ? "tool_error" : "ok", durationMs: now() - started, resultBytes: Buffer.byteLength(JSON.stringify(result)) });
      return screened.restore(result);
    },

    async listPrompts(caller, signal) {
      const grants = deps.grants(caller);
      return settledFlat<ExposedPrompt>(grantedServers(grants).map((s) => upstreams.prompts(s, signal)));
    },

    async getPrompt(caller, name, args, signal) {
      const server = serverOf(name);
      const unknown = new McpError(MCP_ERRORS.invalidParams, `unknown prompt: ${name.slice(0, 160)}`);
      if (server === undefined || !upstreams.servers.includes(server) || !deps.grants(caller).server(server)) throw unknown;
      const prompt = (await upstreams.prompts(server, signal)).find((p) => p.name === name);
      if (!prompt) throw unknown;
      const sessionId = caller.upstreamSessions?.[server];
      return upstreams.getPrompt(server, prompt.upstreamName, args, { signal, ...(sessionId ? { sessionId } : {}), ...(await bearerFor(caller, server)) });
    },

    async listResources(caller, signal) {
      const grants = deps.grants(caller);
      return settledFlat<ExposedResource>(grantedServers(grants).map((s) => upstreams.resources(s, signal)));
    },

    async readResource(caller, uri, signal) {
      // A URI names no server: the one among the caller's granted servers whose listing holds it, and never a guess between two.
      const holders = [...new Set((await this.listResources(caller, signal)).filter((r) => r.definition.uri === uri).map((r) => r.server))];
      if (holders.length === 0) throw new McpError(MCP_ERRORS.invalidParams, "unknown resource", { uri: uri.slice(0, 512) });
      if (holders.length > 1) throw new McpError(MCP_ERRORS.invalidParams, `resource URI is listed by more than one server (${holders.join(", ")}); the gateway cannot tell which to read`, { uri: uri.slice(0, 512) });
      const server = holders[0]!;
      const sessionId = caller.upstreamSessions?.[server];
      return upstreams.readResource(server, uri, { signal, ...(sessionId ? { sessionId } : {}), ...(await bearerFor(caller, server)) });
    },
  };
}
