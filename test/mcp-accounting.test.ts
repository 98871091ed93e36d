import { createHash, randomBytes } from "node:crypto";
import { DataPointType, MeterProvider, MetricReader } from "@opentelemetry/sdk-metrics";
import { InMemorySpanExporter, SimpleSpanProcessor, TracerProvider } from "@opentelemetry/sdk-trace";
import pg from "pg";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { createAuditLog } from "../src/audit/audit-log.js";
import { type Config, resolveConfig } from "../src/config/config.js";
import type { ConfigInput } from "../src/config/schema.js";
import type { Database } from "../src/db/database.js";
import { MIGRATIONS, migrate } from "../src/db/migrations.js";
import { openPgDatabase } from "../src/db/pg-database.js";
import { createLedger } from "../src/ledger/ledger.js";
import { rowOf } from "../src/ledger/ledger-rows.js";
import { spendReport } from "../src/ledger/spend-report.js";
import { createLogger } from "../src/logging/logger.js";
import { canonicalArgumentsSha256 } from "../src/mcp/accounting/canonical-arguments.js";
import { createToolAccounting } from "../src/mcp/accounting/tool-accounting.js";
import { MCP_ERRORS, type McpCaller, McpError, type ToolAccounting, type ToolCallFacts } from "../src/mcp/contract.js";
import type { Principal } from "../src/tenancy/principal.js";
import { createTenancy, type Tenancy } from "../src/tenancy/tenancy.js";
import type { UsageRecord } from "../src/usage/usage-record.js";
import { request } from "./helpers/in-memory-gateway.js";
import { dropPrefix, SHARED_REDIS_URL, testPrefix } from "./helpers/redis.js";

/**
 * Tool-call accounting with the gateway's own parts, in process: tenancy
 * (the memory store, or the shared Redis), the ledger and the audit log on
 * a real PostgreSQL server (each test a database of its own), an SDK meter
 * and tracer with in-memory readers. A tool call must be admitted, refused
 * and charged as a model request is, and land in the same ledger and audit
 * chain.
 */
const SERVER_URL = process.env.SLUICE_TEST_POSTGRES_URL ?? "postgres://postgres:postgres@127.0.0.1:5432/postgres";
const silent = createLogger("silent");
const KEYS = { BUDGET_KEY: "sk-mcp-budget-3f9a1c7e5b2d", RPM_KEY: "sk-mcp-rpm-8e2c4a6b0d1f", TEAM_KEY: "sk-mcp-team-5d7f9b1a3c2e", FREE_KEY: "sk-mcp-free-1a2b3c4d5e6f" };
const AUTH: ConfigInput["auth"] = {
  keys: [
    { name: "budgeted", keyEnv: "BUDGET_KEY", team: "tools", budget: { usd: 0.01, period: "day" } },
    { name: "rpm", keyEnv: "RPM_KEY", limits: { requestsPerMinute: 2 } },
    { name: "teamed", keyEnv: "TEAM_KEY", team: "capped" },
    { name: "free", keyEnv: "FREE_KEY" },
  ],
  teams: [
    { name: "tools", businessLine: "platform" },
    { name: "capped", limits: { requestsPerMinute: 1 } },
  ],
  businessLines: [{ name: "platform" }],
};

class TestReader extends MetricReader {
  protected override async onShutdown(): Promise<void> {}
  protected override async onForceFlush(): Promise<void> {}
}

let server: pg.Client;
const cleanups: Array<() => Promise<void>> = [];
beforeAll(async () => {
  server = new pg.Client({ connectionString: SERVER_URL });
  await server.connect();
});
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});
afterAll(async () => {
  await server?.end();
});

/** A database of this test's own; migrated unless `upTo` stops the migrations at a version. */
async function freshDatabase(upTo?: number): Promise<Database> {
  const name = `sluice_test_${randomBytes(6).toString("hex")}`;
  await server.query(`CREATE DATABASE ${name}`);
  cleanups.push(() => server.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`).then(() => undefined));
  const url = new URL(SERVER_URL);
  url.pathname = `/${name}`;
  const db = openPgDatabase(url.toString(), 4, () => undefined);
  cleanups.push(() => db.close());
  await migrate(db, upTo === undefined ? MIGRATIONS : MIGRATIONS.filter((m) => m.version <= upTo));
  return db;
}

interface Rig {
  readonly config: Config;
  readonly accounting: ToolAccounting;
  readonly tenancy: Tenancy;
  readonly db: Database;
  readonly spans: InMemorySpanExporter;
  readonly reader: TestReader;
  /** Resolves once `n` records (in all) reached the store. */
  recorded(n: number): Promise<readonly UsageRecord[]>;
  /** Writes what the ledger and audit log hold now. */
  flush(): Promise<void>;
  verify: ReturnType<typeof createAuditLog>["verify"];
  principal(env: keyof typeof KEYS): Promise<Principal>;
}

async function rig(options: { readonly redisPrefix?: string; readonly db?: Database; readonly budgetExceededStatus?: 402 | 429; readonly databaseUp?: () => boolean } = {}): Promise<Rig> {
  const config = resolveConfig(
    {
      providers: { sim: { kind: "openai", baseUrl: "http://127.0.0.1:9/v1" } },
      models: { sim: { provider: "sim", model: "m" } },
      auth: { ...AUTH, ...(options.budgetExceededStatus ? { budgetExceededStatus: options.budgetExceededStatus } : {}) },
      ...(options.redisPrefix ? { store: { redis: { url: SHARED_REDIS_URL, prefix: options.redisPrefix, timeoutMs: 5_000, failMode: "closed" } } } : {}),
      ledger: { enabled: true, flushMs: 60_000 },
    },
    KEYS,
  );
  const db = options.db ?? (await freshDatabase());
  // The ledger's and audit log's way to the database, which a test may take away and give back.
  const database = async () => {
    if (options.databaseUp && !options.databaseUp()) throw new Error("connect ECONNREFUSED 127.0.0.1:5432");
    return db;
  };
  const records: UsageRecord[] = [];
  const waiters: Array<() => void> = [];
  let toLedger: ((event: { record: UsageRecord; result: "stored" | "duplicate" | "buffered" | "dropped" | "flushed" }) => void) | undefined;
  const replica = `test-${randomBytes(3).toString("hex")}`;
  const tenancy = createTenancy({
    config: () => config,
    logger: silent,
    replica,
    observer: {
      usageRecorded(event) {
        toLedger?.(event);
        records.push(event.record);
        for (const wake of waiters.splice(0)) wake();
      },
    },
  });
  // Failing closed, tenancy is ready once Redis is connected: before that a call would be admitted on a local share.
  if (!tenancy.ready) await new Promise<void>((resolve) => tenancy.onReadyChange((ready) => ready && resolve()));
  const ledger = createLedger({ settings: config.ledger, ...(tenancy.redis ? { redis: tenancy.redis } : {}), database, replica, logger: silent });
  toLedger = (event) => ledger.observer.usageRecorded?.(event);
  ledger.start();
  const audit = createAuditLog({ database, settings: { maxBuffered: 10_000, flushMs: 60_000, batchSize: 500, timeoutMs: 10_000 }, logger: silent, replica });
  audit.start();
  cleanups.push(async () => {
    await audit.close(1_000);
    await ledger.close(1_000);
    await tenancy.close(1_000);
  });
  const spans = new InMemorySpanExporter();
  const tracer = new TracerProvider({ spanProcessors: [new SimpleSpanProcessor({ exporter: spans })] }).getTracer("test");
  const reader = new TestReader();
  const meter = new MeterProvider({ readers: [reader] }).getMeter("test");
  const accounting = createToolAccounting({ tenancy, trail: audit, meter, tracer, logger: silent });
  return {
    config,
    accounting,
    tenancy,
    db,
    spans,
    reader,
    recorded: async (n) => {
      while (records.length < n) await new Promise<void>((resolve) => waiters.push(resolve));
      return records;
    },
    flush: async () => {
      await ledger.flush();
      await audit.flush();
    },
    verify: () => audit.verify(),
    principal: async (env) => (await tenancy.identify(`Bearer ${KEYS[env]}`, "mcp"))!,
  };
}

const facts = (over: Partial<ToolCallFacts> = {}): ToolCallFacts => ({
  server: "files",
  tool: "files_read",
  upstreamTool: "read",
  argumentsSha256: canonicalArgumentsSha256({ path: "/tmp/a" }),
  priceUsd: 0.004,
  via: "mcp",
  ...over,
});
const never = new AbortController().signal;
const settledOk = { outcome: "ok", durationMs: 12.5, resultBytes: 321 } as const;

/** The McpError `fn` rejects with. */
async function refusal(fn: () => Promise<unknown>): Promise<McpError> {
  const error = await fn().then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(McpError);
  return error as McpError;
}

describe("admission: the key's budgets and request limits, as for a model request", () => {
  it("a budget of $0.01 with a per-call price of $0.004 admits two calls and refuses the third with 402", async () => {
    const r = await rig();
    const caller: McpCaller = { principal: await r.principal("BUDGET_KEY") };
    for (let i = 0; i < 2; i++) (await r.accounting.admit(caller, facts(), never)).settle(settledOk);
    const error = await refusal(() => r.accounting.admit(caller, facts(), never));
    expect(error.code).toBe(MCP_ERRORS.refused);
    expect(error.data).toMatchObject({ status: 402, reason: "budget", level: "key" });
    expect(error.message).toContain("budgeted");
    const spent = await r.tenancy.store.usage(`~k:${caller.principal!.id}`, "day");
    expect(spent.spendMicros).toBe(8_000);
    expect(spent.requests).toBe(2);
  });

  it("auth.budgetExceededStatus 429 is the status a budget refusal carries", async () => {
    const r = await rig({ budgetExceededStatus: 429 });
    const caller: McpCaller = { principal: await r.principal("BUDGET_KEY") };
    const error = await refusal(() => r.accounting.admit(caller, facts({ priceUsd: 0.02 }), never));
    expect(error.data).toMatchObject({ status: 429, reason: "budget", level: "key" });
  });

  it("a key's requests per minute refuse the third call with 429 and a retry-after in seconds; a team's limit names the team", async () => {
    const r = await rig();
    const caller: McpCaller = { principal: await r.principal("RPM_KEY") };
    for (let i = 0; i < 2; i++) (await r.accounting.admit(caller, facts({ priceUsd: 0 }), never)).settle(settledOk);
    const error = await refusal(() => r.accounting.admit(caller, facts({ priceUsd: 0 }), never));
    expect(error.data).toMatchObject({ status: 429, reason: "requests", level: "key" });
    expect(error.data?.retryAfter).toBeGreaterThanOrEqual(1);
    expect(error.data?.retryAfter).toBeLessThanOrEqual(60);

    const teamed: McpCaller = { principal: await r.principal("TEAM_KEY") };
    (await r.accounting.admit(teamed, facts(), never)).settle(settledOk);
    const byTeam = await refusal(() => r.accounting.admit(teamed, facts(), never));
    expect(byTeam.data).toMatchObject({ status: 429, reason: "requests", level: "team" });
    expect(byTeam.message).toContain("team capped");
  });

  it("model requests and tool calls count against one window: a tool call after a model request's admission is the second request", async () => {
    const r = await rig();
    const principal = await r.principal("TEAM_KEY");
    const model = r.tenancy.charge(principal, { request: request("sim", "hi"), requestId: "model-1" });
    await model.admit(r.config.models.get("sim")!);
    const error = await refusal(() => r.accounting.admit({ principal }, facts(), never));
    expect(error.data).toMatchObject({ status: 429, level: "team" });
  });

  it("a call whose caller left while it was admitted is released: not charged, not recorded", async () => {
    const r = await rig();
    const caller: McpCaller = { principal: await r.principal("BUDGET_KEY") };
    const gone = new AbortController();
    gone.abort();
    const error = await refusal(() => r.accounting.admit(caller, facts(), gone.signal));
    expect(error.data).toMatchObject({ reason: "canceled" });
    const spent = await r.tenancy.store.usage(`~k:${caller.principal!.id}`, "day");
    expect(spent.requests + spent.spendMicros + spent.reservedMicros).toBe(0);
  });
});

describe("settlement: ledger, spend reports, audit chain, metrics, span", () => {
  it("a ledger row of kind tool with tool, server, duration, result bytes, outcome, key, team and business line; settled twice, counted once", async () => {
    const r = await rig();
    const principal = await r.principal("BUDGET_KEY");
    const charge = await r.accounting.admit({ principal }, facts({ callId: "call-7" }), never);
    charge.settle(settledOk);
    charge.settle({ outcome: "failed", durationMs: 1, resultBytes: 0 });
    // A call the server never answered is recorded, and not charged.
    (await r.accounting.admit({ principal }, facts({ tool: "files_write", upstreamTool: "write" }), never)).settle({ outcome: "failed", durationMs: 3, resultBytes: 0, errorMessage: "connection refused" });
    await r.recorded(2);
    await r.flush();
    const rows = (await r.db.query<Record<string, unknown>>("SELECT * FROM sluice_ledger ORDER BY tool_name")).rows;
    expect(rows).toHaveLength(2);
    expect(rows[0]).toMatchObject({
      kind: "tool",
      tool_server: "files",
      tool_name: "files_read",
      alias: "files_read",
      target: "files/read",
      request_id: "call-7",
      key_name: "budgeted",
      key_id: principal.id,
      team: "tools",
      business_line: "platform",
      outcome: "completed",
      error_code: null,
    });
    expect(Number(rows[0]!.result_bytes)).toBe(321);
    expect(Number(rows[0]!.duration_ms)).toBeCloseTo(12.5);
    expect(Number(rows[0]!.cost_micros)).toBe(4_000);
    expect(rows[1]).toMatchObject({ kind: "tool", tool_name: "files_write", outcome: "failed", error_code: "failed" });
    expect(Number(rows[1]!.cost_micros)).toBe(0);
    // The failed call's reservation came back: the budget holds the one charged call.
    expect((await r.tenancy.store.usage(`~k:${principal.id}`, "day")).spendMicros).toBe(4_000);
  });

  it("rows written before the migration read as model rows; spend reports group tool spend by kind, server and tool", async () => {
    const db = await freshDatabase(18);
    const model: UsageRecord = {
      id: "model-row",
      requestId: "r1",
      key: "free",
      alias: "sim",
      target: "sim/m",
      inputTokens: 10,
      outputTokens: 5,
      cachedInputTokens: 0,
      reasoningTokens: 0,
      costMicros: 700,
      estimated: false,
      durationMs: 5,
      outcome: "completed",
      at: Date.now(),
    };
    const { kind: _k, tool_server: _s, tool_name: _t, result_bytes: _b, ...before } = rowOf(model, "model-row");
    await db.query(
      "INSERT INTO sluice_ledger (id, at, request_id, key_name, alias, target, input_tokens, cached_input_tokens, output_tokens, reasoning_tokens, cost_micros, estimated, duration_ms, outcome) VALUES ($1, to_timestamp($2 / 1000.0), $3, $4, $5, $6, $7, 0, $8, 0, $9, false, $10, $11)",
      [before.id, before.at, before.request_id, before.key_name, before.alias, before.target, before.input_tokens, before.output_tokens, before.cost_micros, before.duration_ms, before.outcome],
    );
    await migrate(db);
    expect((await db.query<{ kind: string }>("SELECT kind FROM sluice_ledger WHERE id = 'model-row'")).rows[0]?.kind).toBe("model");

    const r = await rig({ db });
    const principal = await r.principal("FREE_KEY");
    for (let i = 0; i < 3; i++) (await r.accounting.admit({ principal }, facts(), never)).settle(settledOk);
    (await r.accounting.admit({ principal }, facts({ server: "search", tool: "search_web", upstreamTool: "web", priceUsd: 0.01 }), never)).settle(settledOk);
    await r.recorded(4);
    await r.flush();
    const window = { startMs: Date.now() - 3_600_000, endMs: Date.now() + 60_000, filter: {}, pageSize: 100, offset: 0 };
    const byKind = await spendReport(db, { ...window, groupBy: ["kind"] });
    expect(byKind.rows.map((row) => [row.group.kind, row.requests, row.costMicros])).toEqual([
      ["model", 1, 700],
      ["tool", 4, 22_000],
    ]);
    const byTool = await spendReport(db, { ...window, groupBy: ["tool_server", "tool"], filter: { kinds: ["tool"] } });
    expect(byTool.rows.map((row) => [row.group.tool_server, row.group.tool, row.requests, row.costUsd])).toEqual([
      ["files", "files_read", 3, "0.012"],
      ["search", "search_web", 1, "0.01"],
    ]);
  });

  it("after 1,000 settled tool calls the audit chain verifies intact, and no argument value is in any stored row", async () => {
    const r = await rig();
    const principal = await r.principal("FREE_KEY");
    const secret = `s3cret-${randomBytes(8).toString("hex")}`;
    const args = { query: secret, nested: { token: secret } };
    for (let i = 0; i < 1_000; i++) {
      const charge = await r.accounting.admit({ principal }, facts({ argumentsSha256: canonicalArgumentsSha256(args), priceUsd: 0 }), never);
      charge.settle({ outcome: i % 10 === 0 ? "tool_error" : "ok", durationMs: i % 7, resultBytes: i });
    }
    // A tool that opts in has its redacted arguments audited, and only those.
    (await r.accounting.admit({ principal }, facts({ auditArguments: { query: "[REDACTED_1]" } }), never)).settle(settledOk);
    await r.recorded(1_001);
    await r.flush();
    const verification = await r.verify();
    expect(verification).toMatchObject({ ok: true, checked: 1_001 });
    const audit = (await r.db.query<{ row: string }>("SELECT row_to_json(a)::text AS row FROM sluice_audit a")).rows.map((x) => x.row);
    expect(audit).toHaveLength(1_001);
    const ledger = (await r.db.query<{ row: string }>("SELECT row_to_json(l)::text AS row FROM sluice_ledger l")).rows.map((x) => x.row);
    expect(ledger).toHaveLength(1_001);
    for (const row of [...audit, ...ledger]) expect(row).not.toContain(secret);
    const first = (await r.db.query<{ actor_id: string; action: string; target: string; details: Record<string, unknown> }>("SELECT actor_id, action, target, details FROM sluice_audit WHERE seq = 1")).rows[0]!;
    expect(first).toMatchObject({ actor_id: principal.id, action: "mcp.tool_call", target: "files_read" });
    expect(first.details).toMatchObject({ key: "free", server: "files", tool: "read", argumentsSha256: canonicalArgumentsSha256({ nested: { token: secret }, query: secret }), outcome: "tool_error", resultBytes: 0, via: "mcp" });
    expect(first.details).not.toHaveProperty("arguments");
    const optedIn = (await r.db.query<{ details: Record<string, unknown> }>("SELECT details FROM sluice_audit WHERE seq = 1001")).rows[0]!;
    expect(optedIn.details.arguments).toBe('{"query":"[REDACTED_1]"}');
  }, 60_000);

  it("metrics by server, tool and outcome, and one execute_tool span per call after the GenAI conventions", async () => {
    const r = await rig();
    const principal = await r.principal("RPM_KEY");
    (await r.accounting.admit({ principal }, facts({ callId: "toolu_1" }), never)).settle(settledOk);
    (await r.accounting.admit({ principal }, facts(), never)).settle({ outcome: "timeout", durationMs: 30_000, resultBytes: 0 });
    await refusal(() => r.accounting.admit({ principal }, facts(), never));
    const { resourceMetrics } = await r.reader.collect();
    const metrics = resourceMetrics.scopeMetrics.flatMap((s) => s.metrics);
    const calls = metrics.find((m) => m.descriptor.name === "sluice.mcp.tool.calls")!;
    const byOutcome = Object.fromEntries(calls.dataPoints.map((p) => [String(p.attributes["sluice.mcp.outcome"]), p.value]));
    expect(byOutcome).toEqual({ ok: 1, timeout: 1, refused: 1 });
    for (const p of calls.dataPoints) expect(p.attributes).toMatchObject({ "sluice.mcp.server": "files", "gen_ai.tool.name": "files_read" });
    const duration = metrics.find((m) => m.descriptor.name === "sluice.mcp.tool.duration")!;
    expect(duration.dataPointType).toBe(DataPointType.HISTOGRAM);
    expect(duration.descriptor.unit).toBe("s");
    const timeout = duration.dataPoints.find((p) => p.attributes["sluice.mcp.outcome"] === "timeout")!;
    expect((timeout.value as { sum: number }).sum).toBeCloseTo(30);

    const spans = r.spans.getFinishedSpans();
    expect(spans.map((s) => s.name)).toEqual(["execute_tool files_read", "execute_tool files_read", "execute_tool files_read"]);
    expect(spans[0]!.attributes).toMatchObject({ "gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "files_read", "gen_ai.tool.call.id": "toolu_1", "sluice.mcp.result_bytes": 321 });
    expect(spans[0]!.attributes).not.toHaveProperty("error.type");
    expect(spans[1]!.attributes).toMatchObject({ "error.type": "timeout" });
    expect(spans[1]!.attributes).not.toHaveProperty("gen_ai.tool.call.id");
    expect(spans[2]!.attributes).toMatchObject({ "error.type": "refused", "sluice.mcp.refusal_status": 429 });
  });

  it("authentication off: nothing admitted, but the call is in the ledger, the audit log, metrics and traces", async () => {
    const r = await rig();
    (await r.accounting.admit({}, facts(), never)).settle(settledOk);
    await r.recorded(1);
    await r.flush();
    const row = (await r.db.query<Record<string, unknown>>("SELECT * FROM sluice_ledger")).rows[0]!;
    expect(row).toMatchObject({ kind: "tool", tool_name: "files_read", key_name: "", key_id: null });
    expect((await r.db.query("SELECT * FROM sluice_audit WHERE actor_kind = 'anonymous' AND action = 'mcp.tool_call'")).rows).toHaveLength(1);
    expect(r.spans.getFinishedSpans()).toHaveLength(1);
  });
});

describe("outages", () => {
  it("tool records and audit events wait while the database is away and are all written, the chain intact, once it is back", async () => {
    let up = false;
    const r = await rig({ databaseUp: () => up });
    const principal = await r.principal("FREE_KEY");
    for (let i = 0; i < 20; i++) (await r.accounting.admit({ principal }, facts({ priceUsd: 0.001 }), never)).settle(settledOk);
    await r.recorded(20);
    await r.flush();
    expect((await r.db.query("SELECT 1 FROM sluice_ledger")).rows).toHaveLength(0);
    up = true;
    await r.flush();
    expect((await r.db.query("SELECT 1 FROM sluice_ledger WHERE kind = 'tool'")).rows).toHaveLength(20);
    expect(await r.verify()).toMatchObject({ ok: true, checked: 20 });
  });
});

describe("with the shared Redis", () => {
  it("two replicas share a key's limits and budget; tool records travel the usage stream into the ledger", async () => {
    const prefix = testPrefix("mcp-accounting");
    cleanups.push(() => dropPrefix(prefix));
    const a = await rig({ redisPrefix: prefix });
    const b = await rig({ redisPrefix: prefix, db: a.db });
    const onA = await a.principal("BUDGET_KEY");
    const onB = await b.principal("BUDGET_KEY");
    (await a.accounting.admit({ principal: onA }, facts(), never)).settle(settledOk);
    (await b.accounting.admit({ principal: onB }, facts(), never)).settle(settledOk);
    const error = await refusal(() => a.accounting.admit({ principal: onA }, facts(), never));
    expect(error.data).toMatchObject({ status: 402, reason: "budget", level: "key" });
    const rpmA = await a.principal("RPM_KEY");
    const rpmB = await b.principal("RPM_KEY");
    (await a.accounting.admit({ principal: rpmA }, facts({ priceUsd: 0 }), never)).settle(settledOk);
    (await b.accounting.admit({ principal: rpmB }, facts({ priceUsd: 0 }), never)).settle(settledOk);
    expect((await refusal(() => b.accounting.admit({ principal: rpmB }, facts({ priceUsd: 0 }), never))).data).toMatchObject({ status: 429, reason: "requests" });
    // Without a principal (authentication off) nothing is admitted, and the record still travels the stream.
    (await a.accounting.admit({}, facts({ priceUsd: 0 }), never)).settle(settledOk);
    await a.recorded(3);
    await b.recorded(2);
    await a.flush();
    await b.flush();
    const rows = (await a.db.query<Record<string, unknown>>("SELECT * FROM sluice_ledger WHERE kind = 'tool' ORDER BY key_name")).rows;
    expect(rows).toHaveLength(5);
    expect(rows.map((row) => [row.key_name, row.tool_server, row.tool_name, Number(row.result_bytes), Number(row.cost_micros)])).toEqual([
      ["", "files", "files_read", 321, 0],
      ["budgeted", "files", "files_read", 321, 4_000],
      ["budgeted", "files", "files_read", 321, 4_000],
      ["rpm", "files", "files_read", 321, 0],
      ["rpm", "files", "files_read", 321, 0],
    ]);
  });
});

describe("canonical arguments", () => {
  it("the same arguments in any key order have one digest; different values another; nesting and size are bounded", () => {
    expect(canonicalArgumentsSha256({ b: 1, a: [true, null, "x"], c: { z: 1, y: 2 } })).toBe(canonicalArgumentsSha256({ c: { y: 2, z: 1 }, a: [true, null, "x"], b: 1 }));
    expect(canonicalArgumentsSha256({ a: 1 })).not.toBe(canonicalArgumentsSha256({ a: "1" }));
    // The canonical text is the JSON with sorted keys and no whitespace.
    expect(canonicalArgumentsSha256({ b: [1, 2], a: "é" })).toBe(createHash("sha256").update('{"a":"é","b":[1,2]}').digest("hex"));
    let deep: unknown = 1;
    for (let i = 0; i < 100; i++) deep = { d: deep };
    expect(() => canonicalArgumentsSha256(deep)).toThrow(expect.objectContaining({ code: MCP_ERRORS.invalidParams }));
    expect(() => canonicalArgumentsSha256({ big: "x".repeat(9 * 1024 * 1024) })).toThrow(expect.objectContaining({ code: MCP_ERRORS.tooLarge }));
  });
});
