import { type ChildProcess, execFile, spawn } from "node:child_process";
import { once } from "node:events";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { createGrpcTransport } from "@connectrpc/connect-node";
import OpenAI, { toFile } from "openai";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startSluice } from "../src/app.js";
import { resolveConfig } from "../src/config/config.js";
import { createLogger } from "../src/logging/logger.js";
import { createTestPki, type TestPki } from "./helpers/certificates.js";
import { chatClient, collect, textOf, userRequest } from "./helpers/clients.js";
import { type Harness, startHarness } from "./helpers/harness.js";
import { type OwnDatabase, ownDatabase } from "./helpers/postgres.js";
import { adopt } from "./helpers/processes.js";
import { scrape } from "./helpers/prometheus.js";
import { freePort } from "./helpers/redis.js";
import { until } from "./helpers/redis-cluster.js";

const run = promisify(execFile);

/**
 * Issue 49, item 6: Redis over TLS (`rediss://`, a CA of the test's own)
 * as an ACL user allowed only what Sluice needs, the line
 * docs/deployment.md gives (default user off). The store, the ledger's
 * consumer group, resumable streams and the batch queue work through it;
 * a user without scripting fails start with NOPERM; scripting taken away
 * at run time holds readiness (named in /readyz) and is counted by
 * sluice.store.rejections until it is given back.
 */
const PREFIX = "sluice-acl:";
const PASSWORD = "acl-test-password-6d8f0b2a4c";
/** The ACL line of docs/deployment.md, for this prefix. */
const SLUICE_ACL = `on >${PASSWORD} resetchannels ~${PREFIX}* &${PREFIX}* -@all +@read +@write +@scripting +@pubsub +@connection +@transaction +@blocking +@keyspace -@dangerous +info +time`;
const KEY = "sk-test-acl-tls-key-1a3c5e7b9d";

let pki: TestPki;
let dir: string;
let redis: ChildProcess;
let port: number;
let db: OwnDatabase;
let h: Harness;

const admin = async (...args: string[]) =>
  (await run("redis-cli", ["-h", "127.0.0.1", "-p", String(port), "--tls", "--cacert", pki.ca.certFile, "--user", "admin", "--pass", "admin-pass-2b4d", "--no-auth-warning", ...args], { timeout: 30_000 })).stdout;

beforeAll(async () => {
  pki = await createTestPki();
  dir = await mkdtemp(join(tmpdir(), "sluice-redis-tls-"));
  port = await freePort();
  const args = [
    ...["--port", "0", "--tls-port", String(port), "--bind", "127.0.0.1", "--dir", dir, "--save", "", "--appendonly", "no"],
    ...["--tls-cert-file", pki.server.certFile, "--tls-key-file", pki.server.keyFile, "--tls-ca-cert-file", pki.ca.certFile, "--tls-auth-clients", "no"],
    ...["--user", "default", "off"],
    ...["--user", "admin", "on", ">admin-pass-2b4d", "~*", "&*", "+@all"],
    ...["--user", "sluice", ...SLUICE_ACL.split(" ")],
    ...["--user", "weak", "on", `>${PASSWORD}`, `~${PREFIX}*`, "+@read", "+@write", "+@connection", "+info"],
  ];
  redis = adopt(spawn("redis-server", args, { stdio: ["ignore", "pipe", "pipe"] }));
  let out = "";
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`redis-server (TLS) did not start within 60 s: ${out}`)), 60_000);
    redis.stdout!.on("data", (d: Buffer) => {
      out += d.toString();
      if (out.includes("Ready to accept connections")) {
        clearTimeout(timer);
        resolve();
      }
    });
    redis.once("exit", (code) => reject(new Error(`redis-server (TLS) exited with ${code}: ${out}`)));
  });
  db = await ownDatabase();
  h = await startHarness({
    routing: (sim) => ({
      providers: { simulator: { kind: "openai", baseUrl: sim.openAiBaseUrl, breaker: { failures: 10_000 } } },
      models: { chat: { provider: "simulator", model: "sim-1?tokens=3", price: { inputPerMTok: 1, outputPerMTok: 2 } } },
    }),
    env: { KEY },
    auth: { tagKeys: ["batch_id"], keys: [{ name: "acl", keyEnv: "KEY", limits: { requestsPerMinute: 1_000 } }] },
    store: {
      redis: { url: `rediss://sluice:${PASSWORD}@127.0.0.1:${port}`, tls: { caFile: pki.ca.certFile }, prefix: PREFIX, failMode: "open", timeoutMs: 2_000 },
      postgres: { url: db.url, poolSize: 4 },
    },
    ledger: { flushMs: 60_000 },
    batch: { concurrency: 2 },
  });
  await h.waitForLog((l) => l.event === "store.connected", 60_000);
}, 180_000);

afterAll(async () => {
  await h?.close();
  if (redis && redis.exitCode === null && redis.signalCode === null) {
    const exited = once(redis, "exit");
    process.kill(redis.pid!, "SIGKILL");
    await exited;
  }
  await db?.drop();
  if (dir) await rm(dir, { recursive: true, force: true });
  if (pki) await rm(pki.dir, { recursive: true, force: true });
}, 60_000);

async function chat(): Promise<number> {
  const response = await fetch(`${h.url}/v1/chat/completions`, {
    method: "POST",
    headers: { authorization: `Bearer ${KEY}`, "content-type": "application/json" },
    body: JSON.stringify({ model: "chat", messages: [{ role: "user", content: "hello" }] }),
  });
  await response.arrayBuffer();
  return response.status;
}

async function ledgerRows(): Promise<number> {
  const client = new pg.Client({ connectionString: db.url });
  await client.connect();
  try {
    return (await client.query("SELECT id FROM sluice_ledger WHERE key_name = 'acl'")).rowCount ?? 0;
  } finally {
    await client.end();
  }
}

describe("Redis over TLS as an ACL user", () => {
  it("fails start with NOPERM when the user may not run scripts", async () => {
    const config = resolveConfig(
      {
        providers: { simulator: { kind: "openai", baseUrl: "http://127.0.0.1:9/v1" } },
        models: { sim: { provider: "simulator", model: "sim-1" } },
        store: { redis: { url: `rediss://weak:${PASSWORD}@127.0.0.1:${port}`, tls: { caFile: pki.ca.certFile }, prefix: PREFIX } },
      },
      {},
    );
    await expect(startSluice({ config, host: "127.0.0.1", port: 0, env: {}, logger: createLogger("error") })).rejects.toThrow(/store.redis refused .*NOPERM/);
  });

  it("serves limits, the ledger's consumer group, resumable streams and the batch queue with only the documented ACL", async () => {
    for (let i = 0; i < 5; i++) expect(await chat()).toBe(200);
    const client = chatClient(createGrpcTransport({ baseUrl: h.url }));
    const headers = { headers: { authorization: `Bearer ${KEY}` } };
    const messages = await collect(client.streamChat(userRequest("chat", "resume me #sim tokens=8", { streamOptions: { resumable: true } }), headers));
    const id = messages[0]?.delta.case === "start" ? messages[0].delta.value.responseId : "";
    expect(textOf(await collect(client.resumeStream({ responseId: id }, headers)))).toBe(textOf(messages));
    const sdk = new OpenAI({ baseURL: `${h.url}/v1`, apiKey: KEY, maxRetries: 0 });
    const lines = Array.from({ length: 3 }, (_, i) => JSON.stringify({ custom_id: `line-${i}`, method: "POST", url: "/v1/chat/completions", body: { model: "chat", messages: [{ role: "user", content: `line ${i}` }] } })).join("\n");
    const file = await sdk.files.create({ file: await toFile(Buffer.from(lines), "lines.jsonl"), purpose: "batch" });
    const batch = await sdk.batches.create({ input_file_id: file.id, endpoint: "/v1/chat/completions", completion_window: "24h" });
    await h.sluice.batches.settled(batch.id);
    expect(await sdk.batches.retrieve(batch.id)).toMatchObject({ status: "completed", request_counts: { completed: 3 } });
    await h.sluice.ledger!.flush();
    expect(await ledgerRows()).toBe(5 + 1 + 3);
    expect(h.logs().filter((l) => l.event === "store.rejected" || l.event === "store.error_reply")).toEqual([]);
    expect(h.logText()).not.toContain(PASSWORD);
    // Redis denied the gateway's user nothing (the entries there are the `weak` user's, from the first test).
    expect(await admin("ACL", "LOG", "100")).not.toMatch(/username\nsluice\n/);
  }, 120_000);

  it("holds readiness and counts rejections while the ACL refuses scripts, and lets go once they are allowed again", async () => {
    expect((await fetch(`${h.url}/readyz`)).status).toBe(200);
    await admin("ACL", "SETUSER", "sluice", "-@scripting");
    expect(await chat()).toBe(200); // served, on this replica's fallback: but no longer in silence
    const readyz = await fetch(`${h.url}/readyz`);
    expect(readyz.status).toBe(503);
    const body = (await readyz.json()) as { waitingFor: string[]; details: { store: { rejected: Record<string, string> } } };
    expect(body.waitingFor).toContain("store_rejected");
    expect(body.details.store.rejected.admit).toBe("NOPERM");
    const m = await scrape(`${h.url}/metrics`);
    expect(m.value("sluice_store_rejections_total", { sluice_store_operation: "admit", sluice_store_error: "NOPERM" })).toBeGreaterThanOrEqual(1);
    expect(h.logs().some((l) => l.event === "store.rejected" && l.code === "NOPERM")).toBe(true);

    await admin("ACL", "SETUSER", "sluice", "+@scripting");
    await until(async () => (await chat()) === 200 && (await fetch(`${h.url}/readyz`)).status === 200, "ready again once scripts are allowed", 60_000);
  }, 120_000);
});
