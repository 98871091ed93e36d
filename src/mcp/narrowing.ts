import type { McpGrant } from "../config/mcp-schema.js";
import { MCP_ERRORS, McpError, NARROW_SERVERS_HEADER, NARROW_TOOLS_HEADER } from "./contract.js";

/** Entries one narrowing header may list. */
export const MAX_NARROW_ENTRIES = 64;
/** Characters of one entry (as a grant's glob). */
export const MAX_NARROW_ENTRY_CHARS = 160;
/** Characters of one header's value, checked before it is split: the entries, their commas and some white space. */
const MAX_NARROW_HEADER_CHARS = MAX_NARROW_ENTRIES * (MAX_NARROW_ENTRY_CHARS + 4);

const TOOL_GLOB = /^[A-Za-z0-9_.*-]+$/;
const SERVER = /^(\*|[A-Za-z0-9][A-Za-z0-9-]{0,31})$/;

/** Request headers as Node's `IncomingHttpHeaders` (lower-case names) or a fetch `Headers`. */
export type NarrowingHeaders = { get(name: string): string | null } | Readonly<Record<string, string | readonly string[] | undefined>>;

function headerValue(headers: NarrowingHeaders, name: string): string | undefined {
  if (typeof headers.get === "function") return (headers as { get(name: string): string | null }).get(name) ?? undefined;
  const value = (headers as Readonly<Record<string, string | readonly string[] | undefined>>)[name];
  // A header sent more than once is one list (RFC 9110 §5.3).
  return typeof value === "string" ? value : value === undefined ? undefined : value.join(",");
}

const malformed = (header: string, message: string) => new McpError(MCP_ERRORS.invalidParams, `${header}: ${message}`, { status: 400, header });

function entries(headers: NarrowingHeaders, header: string, pattern: RegExp, what: string): string[] | undefined {
  const value = headerValue(headers, header);
  if (value === undefined) return undefined;
  if (value.length > MAX_NARROW_HEADER_CHARS) throw malformed(header, `at most ${MAX_NARROW_ENTRIES} entries of at most ${MAX_NARROW_ENTRY_CHARS} characters`);
  const list = value
    .split(",")
    .map((entry) => entry.trim())
    .filter((entry) => entry !== "");
  if (list.length > MAX_NARROW_ENTRIES) throw malformed(header, `at most ${MAX_NARROW_ENTRIES} entries`);
  for (const [i, entry] of list.entries()) {
    // The entry is not echoed: it is the caller's text, and a position is enough to find it.
    if (entry.length > MAX_NARROW_ENTRY_CHARS) throw malformed(header, `entry ${i + 1} is over ${MAX_NARROW_ENTRY_CHARS} characters`);
    if (!pattern.test(entry)) throw malformed(header, `entry ${i + 1} is not ${what}`);
  }
  return list;
}

/**
 * The grant a request's own headers narrow its caller's grants to
 * (McpCaller.narrow; grants.ts intersects it with the configured ones, so
 * it can only take tools away): NARROW_TOOLS_HEADER lists globs over
 * exposed tool names (as `tools.allow`), NARROW_SERVERS_HEADER server names
 * or `*` (as `servers`), comma-separated; empty entries are skipped, and a
 * header present with none narrows to nothing. Undefined when the request
 * carries neither header. A malformed header (too long, too many entries,
 * a character a glob or server name cannot hold) is a McpError
 * `invalidParams` with `data.status` 400, before anything is listed or
 * called.
 */
export function narrowingFrom(headers: NarrowingHeaders): McpGrant | undefined {
  const allow = entries(headers, NARROW_TOOLS_HEADER, TOOL_GLOB, "a tool glob (letters, digits, _ . - and *)");
  const servers = entries(headers, NARROW_SERVERS_HEADER, SERVER, "a server name or *");
  if (allow === undefined && servers === undefined) return undefined;
  return { ...(servers === undefined ? {} : { servers }), ...(allow === undefined ? {} : { tools: { allow } }) };
}
