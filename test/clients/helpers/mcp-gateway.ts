import { createHash, randomBytes } from "node:crypto";
import pg from "pg";
import type { AuditEvent } from "../../../gen/sluice/admin/v1/admin_service_pb.js";
import { adminClient } from "../../helpers/admin.js";
import { baseUrlFor, type Harness, startHarness } from "../../helpers/harness.js";
import { type McpTestServer, startMcpTestServer } from "../../helpers/mcp-test-server.js";
import { type OwnDatabase, ownDatabase } from "../../helpers/postgres.js";
import { type Scrape, scrape } from "../../helpers/prometheus.js";
import { AGENT_MODEL, type Wire } from "./gateway.js";

/** The MCP server's name in the gateway's `mcp.servers`: its tools are exposed as `tests_<tool>`. */
export const MCP_SERVER = "tests";
/** The name a client gives the gateway in its own MCP settings: Claude Code calls the tool `mcp__sluice__tests_echo`. */
export const CLIENT_SERVER_NAME = "sluice";
/** The key's name in the gateway's configuration (ledger rows carry it). */
export const MCP_KEY_NAME = "mcp-client";
/** What `tools/call` of `tests_echo` costs: a price that shows in the ledger. */
export const ECHO_PRICE_USD = 0.002;

/**
 * A gateway for the clients' MCP tests: the simulator as the model on one
 * upstream wire, and the real MCP test server (test/helpers/mcp-test-server.ts)
 * behind `/mcp` as `tests`, reached with the gateway's own identity (an
 * Authorization header from its environment, never the caller's key). A
 * virtual key granted that server's tools; a PostgreSQL database of the
 * test's own holds the ledger and the audit log.
 */
export interface McpClientGateway {
  readonly h: Harness;
  readonly url: string;
  /** The virtual key the client sends (as its model key and as the MCP server's bearer). */
  readonly key: string;
  /** The Authorization the gateway sends the MCP server: its own identity. */
  readonly identity: string;
  readonly server: McpTestServer;
  /** Ledger rows of the key whose kind is `tool`, after a flush. */
  toolLedgerRows(): Promise<Array<Record<string, unknown>>>;
  /** Every audit event, newest first, after a flush. */
  auditEvents(): Promise<AuditEvent[]>;
  metrics(): Promise<Scrape>;
  close(): Promise<void>;
}

export async function startMcpClientGateway(wire: Wire): Promise<McpClientGateway> {
  const key = `sk-mcp-client-${randomBytes(12).toString("hex")}`;
  const admin = `sk-mcp-admin-${randomBytes(12).toString("hex")}`;
  const identity = `Bearer gateway-identity-${randomBytes(12).toString("hex")}`;
  const server = await startMcpTestServer();
  let db: OwnDatabase | undefined;
  let h: Harness | undefined;
  try {
    db = await ownDatabase();
    h = await startHarness({
      routing: (sim) => ({
        providers: { simulator: { kind: wire, baseUrl: baseUrlFor(sim, wire), breaker: { failures: 10_000 } } },
        models: { agent: { provider: "simulator", model: AGENT_MODEL } },
      }),
      env: { CLIENT_KEY: key, ADMIN_KEY: admin, MCP_TESTS_AUTH: identity },
      auth: { adminKeyEnv: "ADMIN_KEY", keys: [{ name: MCP_KEY_NAME, keyEnv: "CLIENT_KEY", mcp: { servers: [MCP_SERVER] } }] },
      mcp: { servers: { [MCP_SERVER]: { http: { url: server.url, headersFromEnv: { Authorization: "MCP_TESTS_AUTH" } }, tools: { echo: { price: { perCall: ECHO_PRICE_USD } } } } } },
      store: { postgres: { url: db.url, poolSize: 2 } },
      // Written when the test asks (flush), not on a timer that would race it.
      ledger: { flushMs: 60_000 },
      compliance: { audit: { flushMs: 60_000 } },
    });
  } catch (error) {
    await h?.close();
    await db?.drop();
    await server.close();
    throw error;
  }
  const harness = h;
  const database = db;
  return {
    h: harness,
    url: harness.url,
    key,
    identity,
    server,
    async toolLedgerRows() {
      await harness.sluice.ledger!.flush();
      const client = new pg.Client({ connectionString: database.url });
      await client.connect();
      try {
        const rows = (await client.query<Record<string, unknown>>("SELECT * FROM sluice_ledger WHERE key_name = $1 ORDER BY at", [MCP_KEY_NAME])).rows;
        return rows.filter((r) => r.kind === "tool");
      } finally {
        await client.end();
      }
    },
    async auditEvents() {
      await harness.sluice.audit!.flush();
      const client = adminClient(harness.url, admin);
      const events: AuditEvent[] = [];
      let token = "";
      do {
        const page = await client.listAuditEvents({ pageSize: 100, pageToken: token });
        events.push(...page.events);
        token = page.nextPageToken;
      } while (token !== "");
      return events;
    },
    metrics: () => scrape(`${harness.url}/metrics`),
    async close() {
      await harness.close();
      await database.drop();
      await server.close();
    },
  };
}

/** The virtual key must never reach the MCP server: not as a header, not inside one. */
export function keyReachedServer(server: McpTestServer, key: string): boolean {
  return server.seen.some((s) => JSON.stringify(s.headers).includes(key));
}

/**
 * The SHA-256 of a flat object of strings as canonical JSON (keys sorted,
 * no white space), computed here on its own: the audit event's digest of
 * the arguments the client sent must be this.
 */
export function argumentsDigest(args: Readonly<Record<string, string>>): string {
  const canonical = `{${Object.keys(args)
    .sort()
    .map((k) => `${JSON.stringify(k)}:${JSON.stringify(args[k])}`)
    .join(",")}}`;
  return createHash("sha256").update(canonical).digest("hex");
}
