import { StreamableHTTPError } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { ErrorCode, McpError as SdkMcpError } from "@modelcontextprotocol/sdk/types.js";
import { MCP_ERRORS, McpError } from "../contract.js";

/** What a failed upstream request was, for the breaker and the answer. */
export interface Classified {
  readonly error: McpError;
  /** Counts against the server's breaker: it did not answer (transport, timeout, a process that died). */
  readonly serverFailed: boolean;
}

/** The JSON-RPC errors a server may answer that mean the same from the gateway; others are the server's failure. */
const PASSED_THROUGH = new Set<number>([MCP_ERRORS.invalidParams, MCP_ERRORS.methodNotFound]);

/** The code the bounded stdio transport answers an oversized line with (stdio-transport.ts): outside JSON-RPC's ranges. */
export const STDIO_TOO_LARGE_CODE = -32_999;

export function tooLarge(server: string, limit: number, read: number): McpError {
  return new McpError(MCP_ERRORS.tooLarge, `the answer of MCP server ${server} is larger than mcp.maxResultBytes (${limit} bytes)`, { setting: "mcp.maxResultBytes", limit, read, server });
}

/**
 * Turns whatever the SDK threw into the gateway's one error type. Messages
 * name the server and what happened, never headers or tokens (the SDK's
 * HTTP errors carry the server's own answer text, which is kept short).
 */
export function classify(server: string, error: unknown, timeoutMs: number): Classified {
  if (error instanceof McpError) return { error, serverFailed: error.code === MCP_ERRORS.upstreamFailed || error.code === MCP_ERRORS.timeout };
  if (error instanceof SdkMcpError) {
    const data = error.data as { timeout?: unknown; maxTotalTimeout?: unknown } | undefined;
    if (error.code === ErrorCode.RequestTimeout && (data?.timeout !== undefined || data?.maxTotalTimeout !== undefined)) {
      return { error: new McpError(MCP_ERRORS.timeout, `MCP server ${server} did not answer within ${timeoutMs} ms (timeoutMs, or maxTotalTimeoutMs)`, { server }), serverFailed: true };
    }
    if (error.code === ErrorCode.ConnectionClosed) return { error: new McpError(MCP_ERRORS.upstreamFailed, `MCP server ${server} closed the connection`, { server }), serverFailed: true };
    if (PASSED_THROUGH.has(error.code)) return { error: new McpError(error.code, error.message), serverFailed: false };
    return { error: new McpError(MCP_ERRORS.upstreamFailed, `MCP server ${server} answered an error: ${short(error.message)}`, { server, upstreamCode: error.code }), serverFailed: false };
  }
  if (error instanceof StreamableHTTPError) {
    return {
      error: new McpError(MCP_ERRORS.upstreamFailed, `MCP server ${server} answered HTTP ${error.code}`, { server, status: error.code }),
      serverFailed: error.code === undefined || error.code < 0 || error.code >= 500 || error.code === 429,
    };
  }
  const message = error instanceof Error ? error.message : String(error);
  return { error: new McpError(MCP_ERRORS.upstreamFailed, `MCP server ${server} failed: ${short(message)}`, { server }), serverFailed: true };
}

function short(text: string): string {
  return text.length > 200 ? `${text.slice(0, 200)}…` : text;
}

export function isSessionGone(error: unknown): boolean {
  return error instanceof StreamableHTTPError && error.code === 404;
}
