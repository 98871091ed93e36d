import type { McpGrant, McpSettings } from "../config/mcp-schema.js";
import type { McpUpstreams, ServerHealth } from "./contract.js";
import type { RecentToolCall, RecentToolCalls } from "./recent-calls.js";

/** A configured server with what the upstream side knows of it now. */
export interface McpServerView {
  readonly name: string;
  readonly transport: "http" | "stdio";
  readonly authMode: "static" | "per-key";
  /** Absent while no upstream side runs (the gateway has not connected to its servers). */
  readonly health?: ServerHealth;
  /** Exposed names; empty when its listing could not be had. */
  readonly tools: readonly string[];
}

/** A key, team or business line with a grant, wherever it was defined. */
export interface McpGrantView {
  readonly level: "business_line" | "team" | "key";
  readonly name: string;
  readonly id: string;
  readonly source: "config" | "runtime";
  readonly grant: McpGrant;
}

export interface McpOverview {
  readonly servers: readonly McpServerView[];
  readonly grants: readonly McpGrantView[];
  readonly recentCalls: readonly RecentToolCall[];
}

/** Something that holds a grant, as the key and level admins list them. */
interface Holder {
  readonly name: string;
  readonly id: string;
  readonly source: "config" | "runtime";
  readonly mcp?: McpGrant;
}

export interface McpOverviewOptions {
  readonly settings: () => McpSettings;
  /** The upstream side, once it runs. */
  readonly upstreams?: () => McpUpstreams | undefined;
  /** Every key (configured and runtime) and level, with their grants. */
  readonly keys: () => Promise<readonly Holder[]>;
  readonly levels: (kind: "team" | "business_line") => Promise<readonly Holder[]>;
  readonly recent: RecentToolCalls;
  /** The ledger's tool rows (every replica's), when the ledger is on; the ring answers when it is off or fails. */
  readonly ledger?: (count: number) => Promise<readonly RecentToolCall[]>;
  /** How long one server's listing may take before the page shows it without tools. */
  readonly listTimeoutMs?: number;
}

/** From the ledger when it is on, else (or when it cannot be read) this replica's ring. */
async function recentCalls(options: McpOverviewOptions, count: number): Promise<readonly RecentToolCall[]> {
  if (options.ledger) {
    try {
      return await options.ledger(count);
    } catch {
      // The page still shows this replica's calls.
    }
  }
  return options.recent.latest(count);
}

/** The longest recent-call list one request may ask for. */
export const MAX_RECENT_CALLS = 500;

/**
 * What the console's MCP page shows, gathered in one place: servers
 * (from the configuration, with the upstream side's health and cached
 * listing), grants (configured and runtime, business lines down to keys)
 * and the last calls. A server whose listing is slow or failing shows
 * without tools; it never holds the page.
 */
export async function mcpOverview(options: McpOverviewOptions, recentCount: number): Promise<McpOverview> {
  const settings = options.settings();
  const upstreams = options.upstreams?.();
  const signal = AbortSignal.timeout(options.listTimeoutMs ?? 2_000);
  const configured = Object.entries(settings.servers).sort(([a], [b]) => a.localeCompare(b));
  const listings = await Promise.all(configured.map(([name]) => (upstreams?.servers.includes(name) ? upstreams.tools(name, signal).catch(() => []) : Promise.resolve([]))));
  // Read after the listings: a listing connects a server that had not been yet, and the page shows where that left it.
  const health = upstreams?.health() ?? {};
  const servers = configured.map(([name, server], i): McpServerView => {
    const h = health[name];
    return { name, transport: server.stdio ? "stdio" : "http", authMode: server.auth.mode, ...(h ? { health: h } : {}), tools: listings[i]!.map((t) => t.name) };
  });
  const [businessLines, teams, keys] = await Promise.all([options.levels("business_line"), options.levels("team"), options.keys()]);
  const held = (level: McpGrantView["level"], list: readonly Holder[]) =>
    list
      .filter((h) => h.mcp !== undefined)
      .sort((a, b) => a.name.localeCompare(b.name))
      .map((h): McpGrantView => ({ level, name: h.name, id: h.id, source: h.source, grant: h.mcp! }));
  return {
    servers,
    grants: [...held("business_line", businessLines), ...held("team", teams), ...held("key", keys)],
    recentCalls: await recentCalls(options, Math.min(Math.max(0, recentCount), MAX_RECENT_CALLS)),
  };
}
