import { Ajv, type ValidateFunction } from "ajv";
import type { McpSettings } from "../config/mcp-schema.js";
import { MCP_ERRORS, McpError } from "./contract.js";

/** Checks a tool call's arguments against the operator's constraint for that tool, if any; throws McpError(invalidParams) naming the JSON path. */
export type ArgumentCheck = (server: string, upstreamTool: string, args: Record<string, unknown>) => void;

/**
 * The operator's per-tool `arguments` constraints (`mcp.servers.<s>.tools.<t>.arguments`),
 * compiled once at start: a constraint is configuration, so compiling it per
 * call would spend ajv's code generation (milliseconds) on every request.
 * The server's own `inputSchema` is the server's business; this one is the
 * operator's narrowing of it (a path under a root, a repository from a list),
 * checked before anything leaves the gateway.
 */
export function compileArgumentConstraints(servers: McpSettings["servers"]): ArgumentCheck {
  // strict: false — an operator's schema may carry annotations (title, examples) ajv's strict mode refuses.
  const ajv = new Ajv({ allErrors: false, strict: false });
  const checks = new Map<string, ValidateFunction>();
  for (const [server, settings] of Object.entries(servers)) {
    for (const [tool, toolSettings] of Object.entries(settings.tools ?? {})) {
      if (toolSettings.arguments) checks.set(`${server}\u0000${tool}`, ajv.compile(toolSettings.arguments));
    }
  }
  return (server, upstreamTool, args) => {
    const check = checks.get(`${server}\u0000${upstreamTool}`);
    if (!check || check(args)) return;
    const first = check.errors?.[0];
    // The path is the caller's own argument names; ajv's message is about the schema (never echoes the value).
    const path = first?.instancePath === "" || first === undefined ? "/" : first.instancePath;
    const why = first?.message ?? "does not match";
    throw new McpError(MCP_ERRORS.invalidParams, `arguments${path === "/" ? "" : path}: ${why} (the gateway's constraint on this tool)`, { path });
  };
}
