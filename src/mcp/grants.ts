import type { McpGrant } from "../config/mcp-schema.js";
import type { McpCaller, ToolGrants } from "./contract.js";
import { anyMatches, compileGlob, type ToolGlob } from "./tool-glob.js";

/** One grant, ready to ask: its servers (undefined: every server), its allow globs (undefined: every tool), its deny globs. */
interface CompiledGrant {
  readonly servers?: ReadonlySet<string>;
  readonly allow?: readonly ToolGlob[];
  readonly deny: readonly ToolGlob[];
  /**
   * Whether the globs admit a name, as answered before (a listing asks
   * about the same names request after request), for a grant of many globs
   * only: a few globs answer as fast as a lookup, and keep no memory.
   */
  readonly decisions?: Map<string, boolean>;
}

/** Globs from which a grant remembers its answers. */
const REMEMBER_FROM_GLOBS = 8;
/**
 * Names whose answers one grant remembers; past it they are forgotten all
 * at once, so that calls naming ever new tools cannot grow it.
 */
const MAX_DECISIONS = 2_048;

/**
 * Grants are immutable objects of the configuration (or of a runtime key,
 * team or business line as the registry read it): each is compiled once,
 * and forgotten with it when a reload or a runtime change replaces it.
 */
const compiled = new WeakMap<McpGrant, CompiledGrant>();

function compile(grant: McpGrant): CompiledGrant {
  let done = compiled.get(grant);
  if (done) return done;
  const servers = grant.servers;
  const allow = grant.tools?.allow;
  done = {
    ...(servers === undefined || servers.includes("*") ? {} : { servers: new Set(servers) }),
    ...(allow === undefined ? {} : { allow: allow.map(compileGlob) }),
    deny: (grant.tools?.deny ?? []).map(compileGlob),
    ...((allow?.length ?? 0) + (grant.tools?.deny?.length ?? 0) >= REMEMBER_FROM_GLOBS ? { decisions: new Map() } : {}),
  };
  compiled.set(grant, done);
  return done;
}

const seesServer = (grant: CompiledGrant, server: string) => grant.servers === undefined || grant.servers.has(server);

/** Whether one grant's globs admit the exposed name: allowed (no `allow`: every name), and not denied (deny wins). */
function namesAdmit(grant: CompiledGrant, name: string): boolean {
  const { decisions } = grant;
  let known = decisions?.get(name);
  if (known === undefined) {
    known = (grant.allow === undefined || anyMatches(grant.allow, name)) && !anyMatches(grant.deny, name);
    if (decisions) {
      if (decisions.size >= MAX_DECISIONS) decisions.clear();
      decisions.set(name, known);
    }
  }
  return known;
}

const NOTHING: ToolGrants = { server: () => false, tool: () => false };

/**
 * Who may see and call which MCP tools: the one predicate behind
 * `tools/list` and `tools/call` (and the model-call tool loop), so a
 * listed tool is always callable and an unlisted one never is.
 *
 * - Deny by default: while authentication is on, a caller whose key, team
 *   and business line carry no `mcp` grant at all sees nothing.
 * - Every level that has a grant must admit a tool: the business line's,
 *   the team's and the key's grants intersect, so a level below can only
 *   narrow what the level above it grants, and a level without a grant
 *   adds no limit of its own.
 * - A grant admits a tool when its `servers` name the tool's server (`*`,
 *   or no `servers` at all: every server), its `tools.allow` globs match
 *   the exposed name `<server>_<tool>` (no `allow`: every tool), and no
 *   `tools.deny` glob matches it (deny wins over allow).
 * - While authentication is off (no `caller.principal`) every tool is
 *   granted: there is no key to hold a grant.
 * - `caller.narrow` (the request's own headers) is one more level,
 *   intersected like the others: a caller can narrow its set, never widen
 *   it, and a narrowing header without a grant above it grants nothing.
 *
 * `server(s)` answers whether the caller may see anything of server `s`:
 * the servers part of every level only (a server's prompts and resources
 * have no tool names for globs to match).
 */
export function toolGrants(caller: McpCaller): ToolGrants {
  const levels: CompiledGrant[] = [];
  for (const grant of [caller.businessLine?.mcp, caller.team?.mcp, caller.principal?.mcp]) if (grant !== undefined) levels.push(compile(grant));
  if (caller.principal !== undefined && levels.length === 0) return NOTHING;
  // The narrowing grant is this request's own object: compiled here, cached with it for the request's other questions.
  if (caller.narrow !== undefined) levels.push(compile(caller.narrow));
  return {
    server: (server) => levels.every((grant) => seesServer(grant, server)),
    tool(server, name) {
      // Every level's servers first (a set lookup each), then the globs.
      for (const grant of levels) if (!seesServer(grant, server)) return false;
      for (const grant of levels) if (!namesAdmit(grant, name)) return false;
      return true;
    },
  };
}
