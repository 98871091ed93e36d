import { createHash } from "node:crypto";
import { loadavg } from "node:os";
import { join } from "node:path";
import type { McpLoadResult, McpLoadSpec } from "./mcp-client.js";
import type { Proc } from "./procs.js";
import { type Goal, table } from "./report.js";
import { round, summary } from "./stats.js";

/**
 * The MCP gateway (issue #48): what `/mcp` adds to a `tools/call` over
 * calling the same MCP server directly, at 1 and 64 callers at once, with
 * everything a production key brings on: a grant, a PII policy (`redact`:
 * the arguments carry an email address, redacted before they leave and
 * restored in the answer), a price, Redis limits and budget, the ledger
 * and the audit log on a PostgreSQL server by URL; and what `tools/list`
 * from the gateway's cache adds over listing the server directly. The
 * direct path is the baseline, measured in the same rounds (sides
 * alternated, A B B A), by the same load generator (bench/mcp-client.ts:
 * official SDK clients, a session each) against the same server process
 * (bench/mcp-server.ts).
 */

export interface McpSizes {
  /** Callers at once. */
  readonly levels: readonly number[];
  /** Measured `tools/call`s per side, level and round (split over the callers). */
  readonly calls: number;
  /** Measured `tools/list`s per side and round, one caller. */
  readonly lists: number;
  readonly rounds: number;
  /** Unmeasured requests each caller makes first. */
  readonly warmUp: number;
}

export interface McpDeps {
  readonly sizes: McpSizes;
  /** Starts the MCP server process (bench/mcp-server.ts); its `/mcp` URL. */
  readonly startServer: () => Promise<{ proc: Proc; url: string }>;
  /** Starts a gateway with these configuration sections; the benchmark adds providers and models. */
  readonly startGateway: (config: Record<string, unknown>) => Promise<{ proc: Proc; url: string }>;
  readonly runLoad: (spec: McpLoadSpec) => Promise<McpLoadResult>;
  readonly redisPort: number;
  readonly log: (line: string) => void;
}

/** The server's name in the gateway: its echo is `bench_echo` there. */
const SERVER = "bench";
export const MCP_BENCH_KEY = "sk-bench-mcp-0123456789abcdef0123";
/** The tool's arguments: one email address for the PII policy to redact, in a short support line. */
const TEXT = "Please write to li_na70@example.com about ticket 48213; the refund is still pending.";
const LIMITS = { requestsPerMinute: 1_000_000, tokensPerMinute: 1_000_000_000, concurrentStreams: 1_000_000 };
const BUDGET = { usd: 1_000_000_000, period: "month" } as const;

type Side = "direct" | "gateway";
interface Figures {
  readonly n: number;
  readonly p50: number;
  readonly p99: number;
  readonly errors: number;
}
export interface McpLevel {
  readonly direct: Figures;
  readonly gateway: Figures;
  readonly addedP50Ms: number;
  readonly addedP99Ms: number;
}
export interface McpResult {
  readonly call: Readonly<Record<number, McpLevel>>;
  readonly list: McpLevel;
  /** Rows in the ledger and events in the audit log once the gateway's calls settled (counted in the database). */
  readonly ledgerRows: number;
  readonly auditEvents: number;
  readonly gatewayCalls: number;
  readonly firstError?: string;
  readonly loadAverage: number;
}

/** Counts rows of `table` every 200 ms until there are `rows` or `timeoutMs` has passed; the last count. */
async function settledCount(count: () => Promise<number>, rows: number, timeoutMs = 30_000): Promise<number> {
  const deadline = performance.now() + timeoutMs;
  for (;;) {
    const n = await count();
    if (n >= rows || performance.now() > deadline) return n;
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
}

export async function mcpScenario(deps: McpDeps): Promise<McpResult> {
  const { PGlite } = await import("@electric-sql/pglite");
  const { PGLiteSocketServer } = await import("@electric-sql/pglite-socket");
  const { createServer } = await import("node:net");
  const port = await new Promise<number>((resolve) => {
    const s = createServer().listen(0, "127.0.0.1", () => {
      const p = (s.address() as { port: number }).port;
      s.close(() => resolve(p));
    });
  });
  const db = await PGlite.create();
  const pgServer = new PGLiteSocketServer({ db, port, host: "127.0.0.1", maxConnections: 8 });
  await pgServer.start();
  const server = await deps.startServer();
  let gateway: { proc: Proc; url: string } | undefined;
  try {
    gateway = await deps.startGateway({
      auth: {
        keys: [
          {
            name: "bench-mcp",
            sha256: createHash("sha256").update(MCP_BENCH_KEY).digest("hex"),
            limits: LIMITS,
            budget: BUDGET,
            pii: { mode: "redact" },
            mcp: { servers: [SERVER], tools: { allow: [`${SERVER}_*`] } },
          },
        ],
      },
      mcp: { servers: { [SERVER]: { http: { url: server.url }, tools: { echo: { price: { perCall: 0.0001 } } } } } },
      store: {
        redis: { url: `redis://127.0.0.1:${deps.redisPort}`, prefix: `sluice-bench-mcp:${process.pid}:`, failMode: "closed", timeoutMs: 2_000 },
        postgres: { url: `postgres://postgres@127.0.0.1:${port}/postgres`, poolSize: 4 },
      },
    });
    const gw = gateway;
    const target = (side: Side) => (side === "direct" ? { url: server.url, tool: "echo" } : { url: `${gw.url}/mcp`, tool: `${SERVER}_echo`, bearer: MCP_BENCH_KEY });
    const { levels, calls, lists, rounds, warmUp } = deps.sizes;
    let firstError: string | undefined;
    let gatewayCalls = 0;
    const measure = async (op: McpLoadSpec["op"], lanes: number, perLane: number): Promise<McpLevel> => {
      const ms: Record<Side, number[]> = { direct: [], gateway: [] };
      const errors: Record<Side, number> = { direct: 0, gateway: 0 };
      for (let r = 0; r < rounds; r++) {
        for (const side of r % 2 === 0 ? (["direct", "gateway"] as const) : (["gateway", "direct"] as const)) {
          const got = await deps.runLoad({ ...target(side), op, text: TEXT, lanes, perLane, warmUp });
          ms[side].push(...got.ms);
          errors[side] += got.errors;
          if (side === "gateway" && op === "call") gatewayCalls += got.ms.length + got.errors + lanes * warmUp;
          firstError ??= got.firstError;
        }
      }
      const figures = (side: Side): Figures => {
        const s = summary(ms[side]);
        return { n: s.n, p50: s.p50, p99: s.p99, errors: errors[side] };
      };
      const direct = figures("direct");
      const through = figures("gateway");
      return { direct, gateway: through, addedP50Ms: through.p50 - direct.p50, addedP99Ms: through.p99 - direct.p99 };
    };
    const call: Record<number, McpLevel> = {};
    for (const lanes of levels) {
      call[lanes] = await measure("call", lanes, Math.max(1, Math.ceil(calls / lanes)));
      deps.log(`mcp: tools/call at ${lanes}: direct p50 ${round(call[lanes]!.direct.p50, 3)} ms, through the gateway +${round(call[lanes]!.addedP50Ms, 3)} ms p50, +${round(call[lanes]!.addedP99Ms, 3)} ms p99`);
    }
    const list = await measure("list", 1, lists);
    deps.log(`mcp: tools/list: direct p50 ${round(list.direct.p50, 3)} ms, from the gateway's cache +${round(list.addedP50Ms, 3)} ms p50`);
    const count = (sql: string) => async () => Number((await db.query<{ n: string }>(sql)).rows[0]!.n);
    const ledgerRows = await settledCount(count("SELECT count(*) AS n FROM sluice_ledger"), gatewayCalls);
    const auditEvents = await settledCount(count("SELECT count(*) AS n FROM sluice_audit"), gatewayCalls);
    return { call, list, ledgerRows, auditEvents, gatewayCalls, ...(firstError ? { firstError } : {}), loadAverage: loadavg()[0]! };
  } finally {
    await gateway?.proc.stop();
    await server.proc.stop();
    await pgServer.stop();
    await db.close();
  }
}

/** The load generator's and the server's compiled entry points. */
export const mcpEntries = (root: string) => ({ client: join(root, "dist/bench/mcp-client.js"), server: join(root, "dist/bench/mcp-server.js") });

const added = (n: number) => `${n >= 0 ? "+" : ""}${round(n, 3)} ms`;

/** Goals: p50 ≤ 1 ms added to `tools/call` (at each level), ≤ 0.2 ms to `tools/list` from the cache; no errors; every call in the ledger and the audit log. */
export function mcpGoals(r: McpResult): Goal[] {
  const levels = Object.keys(r.call).map(Number);
  const errors = levels.reduce((n, c) => n + r.call[c]!.gateway.errors + r.call[c]!.direct.errors, 0) + r.list.gateway.errors + r.list.direct.errors;
  return [
    {
      id: "mcp-call",
      name: `MCP: tools/call p50 added by /mcp over calling the server directly (grant, PII redact, price, Redis limits and budget, ledger and audit on), at ${levels.join(" and ")} callers (p99 for information)`,
      target: "≤ +1 ms",
      measured: `${levels.map((c) => `${c}: ${added(r.call[c]!.addedP50Ms)} (p99 ${added(r.call[c]!.addedP99Ms)})`).join("; ")}${errors ? `; ${errors} errors (${r.firstError ?? ""})` : ""}`,
      met: errors === 0 && levels.every((c) => r.call[c]!.addedP50Ms <= 1),
    },
    {
      id: "mcp-list",
      name: "MCP: tools/list p50 added by /mcp (from its cache) over listing the server directly, 1 caller",
      target: "≤ +0.2 ms",
      measured: `${added(r.list.addedP50Ms)} (direct p50 ${round(r.list.direct.p50, 3)} ms)`,
      met: r.list.gateway.errors === 0 && r.list.addedP50Ms <= 0.2,
    },
    {
      id: "mcp-records",
      name: "MCP: the gateway's tool calls in the ledger and in the audit log",
      target: "every one",
      measured: `${r.ledgerRows} ledger rows, ${r.auditEvents} audit events for ${r.gatewayCalls} calls`,
      met: r.ledgerRows >= r.gatewayCalls && r.auditEvents >= r.gatewayCalls,
    },
  ];
}

export function mcpSection(r: McpResult): string {
  const row = (what: string, l: McpLevel) => [
    what,
    `${round(l.direct.p50, 3)} / ${round(l.direct.p99, 3)}`,
    `${round(l.gateway.p50, 3)} / ${round(l.gateway.p99, 3)}`,
    added(l.addedP50Ms),
    added(l.addedP99Ms),
    `${l.direct.n} / ${l.gateway.n}`,
    l.direct.errors + l.gateway.errors,
  ];
  return [
    "MCP gateway (`/mcp`), official SDK clients, a session per caller; the direct path is the same MCP server called without the gateway, in the same rounds. ms:",
    table(
      ["request", "direct p50 / p99", "through /mcp p50 / p99", "added p50", "added p99", "samples", "errors"],
      [...Object.keys(r.call).map((c) => row(`tools/call, ${c} at once`, r.call[Number(c)]!)), row("tools/list (cached), 1", r.list)],
    ),
    "",
    `Ledger rows ${r.ledgerRows}, audit events ${r.auditEvents}, for ${r.gatewayCalls} calls through the gateway; load average ${round(r.loadAverage)}.`,
  ].join("\n");
}
