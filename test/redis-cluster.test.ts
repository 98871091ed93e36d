import { createGrpcTransport } from "@connectrpc/connect-node";
import { Cluster } from "ioredis";
import OpenAI, { toFile } from "openai";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startSluice } from "../src/app.js";
import { LINE_QUEUE } from "../src/batch/queued-runner.js";
import { resolveConfig } from "../src/config/config.js";
import { createLogger } from "../src/logging/logger.js";
import { chatClient, collect, textOf, userRequest } from "./helpers/clients.js";
import { type Harness, startHarness } from "./helpers/harness.js";
import { type OwnDatabase, ownDatabase } from "./helpers/postgres.js";
import { type OwnCluster, startOwnCluster, until } from "./helpers/redis-cluster.js";

/**
 * Issue 49, item 6: a gateway on a 3-master Redis Cluster (a replica
 * each), started here. A standalone configuration pointed at a node fails
 * start instead of falling back to per-replica limits in silence; with
 * `store.redis.cluster` and a hash-tagged prefix the limits, budgets, the
 * usage stream and the ledger's consumer group, resumable streams and the
 * BullMQ queue all work, and a master failover under traffic loses no
 * usage record and keeps a key's admissions within twice its limit.
 */
const KEYS = {
  limited: "sk-test-cluster-limited-4b6d8f0a2c",
  budget: "sk-test-cluster-budget-7e9a1c3b5d",
  traffic: "sk-test-cluster-traffic-0f2b4d6e8a",
  killed: "sk-test-cluster-killed-8a0c2e4b6d",
  batch: "sk-test-cluster-batch-3c5e7a9b1d",
};
const PRICE = { inputPerMTok: 1_000, outputPerMTok: 2_000 };
const PREFIX = "{sluice-ct}:";
const LIMIT = 20;
const FAILOVER_LIMIT = 60;
const KILL_LIMIT = 60;

let cluster: OwnCluster;
let db: OwnDatabase;
let h: Harness;

beforeAll(async () => {
  cluster = await startOwnCluster();
  db = await ownDatabase();
  h = await startHarness({
    routing: (sim) => ({
      providers: { simulator: { kind: "openai", baseUrl: sim.openAiBaseUrl, breaker: { failures: 10_000 } } },
      models: { chat: { provider: "simulator", model: "sim-1?tokens=3", price: PRICE } },
    }),
    env: { KILLED: KEYS.killed, LIMITED: KEYS.limited, BUDGET: KEYS.budget, TRAFFIC: KEYS.traffic, BATCH: KEYS.batch },
    auth: {
      tagKeys: ["batch_id"],
      keys: [
        { name: "limited", keyEnv: "LIMITED", limits: { requestsPerMinute: LIMIT } },
        { name: "budget", keyEnv: "BUDGET", team: "thrifty" },
        { name: "traffic", keyEnv: "TRAFFIC", limits: { requestsPerMinute: FAILOVER_LIMIT } },
        { name: "batch", keyEnv: "BATCH" },
        { name: "killed", keyEnv: "KILLED", limits: { requestsPerMinute: KILL_LIMIT } },
      ],
      teams: [{ name: "thrifty", businessLine: "retail", budget: { usd: 0.05, period: "month" } }],
      businessLines: [{ name: "retail" }],
    },
    store: {
      redis: { url: cluster.urls[0]!, cluster: { nodes: cluster.urls.slice(1, 3) }, prefix: PREFIX, failMode: "open", timeoutMs: 2_000 },
      postgres: { url: db.url, poolSize: 4 },
    },
    // A record the stream lost with a killed master is written from this replica's copy after claimIdleMs.
    ledger: { flushMs: 60_000, claimIdleMs: 2_000 },
    batch: { concurrency: 2 },
  });
  await h.waitForLog((l) => l.event === "store.connected", 60_000);
}, 240_000);

afterAll(async () => {
  await h?.close();
  await cluster?.stop();
  await db?.drop();
}, 60_000);

async function chat(key: string, content = "hello"): Promise<number> {
  const response = await fetch(`${h.url}/v1/chat/completions`, {
    method: "POST",
    headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
    body: JSON.stringify({ model: "chat", messages: [{ role: "user", content }] }),
  });
  await response.arrayBuffer();
  return response.status;
}

async function ledgerRows(keyName: string): Promise<number> {
  const client = new pg.Client({ connectionString: db.url });
  await client.connect();
  try {
    return (await client.query("SELECT id FROM sluice_ledger WHERE key_name = $1", [keyName])).rowCount ?? 0;
  } finally {
    await client.end();
  }
}

/** A client of the test's own on the cluster: what the gateway wrote, read by another connection. */
async function look<T>(read: (c: Cluster) => Promise<T>): Promise<T> {
  const c = new Cluster(cluster.urls.map((u) => ({ host: "127.0.0.1", port: Number(new URL(u).port) })));
  c.on("error", () => undefined);
  try {
    return await read(c);
  } finally {
    c.disconnect();
  }
}

describe("a standalone configuration pointed at a Redis Cluster node", () => {
  it("fails start with the setting to change, instead of serving per-replica limits with one warning", async () => {
    const config = resolveConfig(
      {
        providers: { simulator: { kind: "openai", baseUrl: "http://127.0.0.1:9/v1" } },
        models: { sim: { provider: "simulator", model: "sim-1" } },
        store: { redis: { url: cluster.urls[0]!, prefix: "plain:" } },
      },
      {},
    );
    await expect(startSluice({ config, host: "127.0.0.1", port: 0, env: {}, logger: createLogger("error") })).rejects.toThrow(/node of a Redis Cluster: set store.redis.cluster/);
  });

  it("is refused by the configuration when the prefix holds no hash tag", () => {
    expect(() =>
      resolveConfig(
        {
          providers: { simulator: { kind: "openai", baseUrl: "http://127.0.0.1:9/v1" } },
          models: { sim: { provider: "simulator", model: "sim-1" } },
          store: { redis: { url: cluster.urls[0]!, prefix: "plain:", cluster: { nodes: [] } } },
        },
        {},
      ),
    ).toThrow(/hash tag/);
  });
});

describe("a gateway on a 3-master Redis Cluster", () => {
  it("shares a key's limit and a team's budget through the cluster", async () => {
    const statuses: number[] = [];
    for (let i = 0; i < LIMIT + 5; i++) statuses.push(await chat(KEYS.limited));
    expect(statuses.filter((s) => s === 200)).toHaveLength(LIMIT);
    expect(statuses.slice(LIMIT).every((s) => s === 429)).toBe(true);
    // The team's budget (0.05 USD) runs out after some requests: refused with 402, never more than the budget spent.
    const budgetStatuses: number[] = [];
    for (let i = 0; i < 200 && !budgetStatuses.includes(402); i++) budgetStatuses.push(await chat(KEYS.budget, "a longer prompt to spend the team's budget sooner ".repeat(20)));
    expect(budgetStatuses).toContain(402);
    expect(h.logs().filter((l) => l.event === "store.down" || l.event === "store.rejected")).toEqual([]);
    // Every key lives in the prefix's slot: the limit's windows were counted there, not in this replica's memory.
    const slot = Number(await cluster.cli(cluster.ports[0]!, "CLUSTER", "KEYSLOT", PREFIX));
    const owner = await cluster.masterOfSlot(slot);
    expect(Number(await cluster.cli(owner, "CLUSTER", "COUNTKEYSINSLOT", String(slot)))).toBeGreaterThan(3);
  }, 120_000);

  it("hands every usage record through the stream and the ledger's consumer group to the database", async () => {
    const usage = await look((c) => c.xlen(`${PREFIX}usage`));
    expect(usage).toBeGreaterThanOrEqual(LIMIT);
    await h.sluice.ledger!.flush();
    expect(await ledgerRows("limited")).toBe(LIMIT);
    const groups = (await look((c) => c.xinfo("GROUPS", `${PREFIX}usage`))) as unknown[];
    expect(groups.length).toBeGreaterThan(0);
  }, 60_000);

  it("resumes a stream from the replay kept in the cluster", async () => {
    const client = chatClient(createGrpcTransport({ baseUrl: h.url }));
    const headers = { headers: { authorization: `Bearer ${KEYS.batch}` } };
    const messages = await collect(client.streamChat(userRequest("chat", "resume me #sim tokens=12", { streamOptions: { resumable: true } }), headers));
    const id = messages[0]?.delta.case === "start" ? messages[0].delta.value.responseId : "";
    expect(id).not.toBe("");
    const resumed = await collect(client.resumeStream({ responseId: id }, headers));
    expect(textOf(resumed)).toBe(textOf(messages));
    expect(textOf(resumed).length).toBeGreaterThan(0);
  }, 60_000);

  it("runs a batch on the BullMQ queue under the hash-tagged prefix", async () => {
    const sdk = new OpenAI({ baseURL: `${h.url}/v1`, apiKey: KEYS.batch, maxRetries: 0 });
    const lines = Array.from({ length: 6 }, (_, i) => JSON.stringify({ custom_id: `line-${i}`, method: "POST", url: "/v1/chat/completions", body: { model: "chat", messages: [{ role: "user", content: `line ${i}` }] } })).join("\n");
    const file = await sdk.files.create({ file: await toFile(Buffer.from(lines), "lines.jsonl"), purpose: "batch" });
    const batch = await sdk.batches.create({ input_file_id: file.id, endpoint: "/v1/chat/completions", completion_window: "24h" });
    await h.sluice.batches.settled(batch.id);
    expect(await sdk.batches.retrieve(batch.id)).toMatchObject({ status: "completed", request_counts: { completed: 6 } });
    const slot = Number(await cluster.cli(cluster.ports[0]!, "CLUSTER", "KEYSLOT", PREFIX));
    const queueKeys = (await cluster.cli(await cluster.masterOfSlot(slot), "CLUSTER", "GETKEYSINSLOT", String(slot), "1000")).split("\n").filter((k) => k.startsWith(`${PREFIX}${LINE_QUEUE}:`));
    expect(queueKeys.length).toBeGreaterThan(0);
  }, 120_000);

  it("keeps every usage record and a key's admissions within twice its limit through a master failover under traffic", async () => {
    const slot = Number(await cluster.cli(cluster.ports[0]!, "CLUSTER", "KEYSLOT", PREFIX));
    const oldMaster = await cluster.masterOfSlot(slot);
    const replica = (await cluster.roles()).replicas.find((r) => r.masterPort === oldMaster)!.port;
    const counts = { ok: 0, refused: 0, other: 0, okAfterSwitch: 0, refusedAfterSwitch: 0 };
    let switched = false;
    let failoverAsked = false;
    let promotionMs = 0;
    const deadline = Date.now() + 90_000;
    const worker = async () => {
      while (Date.now() < deadline && !(switched && counts.refusedAfterSwitch >= 10)) {
        const status = await chat(KEYS.traffic);
        if (status === 200) {
          counts.ok++;
          if (switched) counts.okAfterSwitch++;
        } else if (status === 429) {
          counts.refused++;
          if (switched) counts.refusedAfterSwitch++;
        } else counts.other++;
      }
    };
    const failover = (async () => {
      await until(async () => counts.ok >= FAILOVER_LIMIT / 3, "traffic before the failover");
      failoverAsked = true;
      const asked = performance.now();
      await cluster.cli(replica, "CLUSTER", "FAILOVER");
      await until(async () => (await cluster.masterOfSlot(slot)) === replica, "the replica promoted", 60_000);
      promotionMs = Math.round(performance.now() - asked);
      switched = true;
    })();
    await Promise.all([worker(), worker(), worker(), worker(), failover]);
    expect(failoverAsked && switched).toBe(true);
    const fallbacks = h.logs().filter((l) => l.event === "store.down").length;
    console.info(`failover under traffic: ${JSON.stringify({ ...counts, limit: FAILOVER_LIMIT, storeDownEvents: fallbacks, promotionMs })}`);
    expect(counts.other).toBe(0);
    expect(counts.ok).toBeGreaterThanOrEqual(FAILOVER_LIMIT);
    expect(counts.ok).toBeLessThanOrEqual(2 * FAILOVER_LIMIT);
    // Nothing lost: every answered request's usage record reaches the ledger (buffered ones are flushed first).
    await until(
      async () => {
        await h.sluice.ledger!.flush();
        return (await ledgerRows("traffic")) === counts.ok;
      },
      `all ${counts.ok} usage rows in the ledger`,
      60_000,
    );
    expect(await ledgerRows("traffic")).toBe(counts.ok);
  }, 240_000);

  it("keeps every usage record and a key's admissions within twice its limit when the master is killed under traffic", async () => {
    const slot = Number(await cluster.cli(cluster.ports[0]!, "CLUSTER", "KEYSLOT", PREFIX));
    const master = await cluster.masterOfSlot(slot);
    const replica = (await cluster.roles()).replicas.find((r) => r.masterPort === master)!.port;
    await until(async () => (await cluster.cli(replica, "INFO", "replication")).includes("master_link_status:up"), "the replica in sync");
    const counts = { ok: 0, refused: 0, other: 0, refusedAfterSwitch: 0 };
    let switched = false;
    let promotionMs = 0;
    const deadline = Date.now() + 120_000;
    const worker = async () => {
      while (Date.now() < deadline && !(switched && counts.refusedAfterSwitch >= 10)) {
        const status = await chat(KEYS.killed);
        if (status === 200) counts.ok++;
        else if (status === 429) {
          counts.refused++;
          if (switched) counts.refusedAfterSwitch++;
        } else counts.other++;
      }
    };
    const kill = (async () => {
      await until(async () => counts.ok >= KILL_LIMIT / 3, "traffic before the kill");
      const killedAt = performance.now();
      await cluster.kill(master);
      await until(async () => (await cluster.masterOfSlot(slot)) === replica, "the replica promoted", 90_000);
      promotionMs = Math.round(performance.now() - killedAt);
      switched = true;
    })();
    await Promise.all([worker(), worker(), worker(), worker(), kill]);
    const events = (name: string) => h.logs().filter((l) => l.event === name).length;
    console.info(`killed master under traffic: ${JSON.stringify({ ...counts, limit: KILL_LIMIT, promotionMs, storeDown: events("store.down"), storeSlow: events("store.slow"), errorReplies: events("store.error_reply") })}`);
    expect(switched).toBe(true);
    expect(counts.other).toBe(0);
    expect(counts.ok).toBeGreaterThanOrEqual(KILL_LIMIT);
    expect(counts.ok).toBeLessThanOrEqual(2 * KILL_LIMIT);
    await until(
      async () => {
        await h.sluice.ledger!.flush();
        return (await ledgerRows("killed")) === counts.ok;
      },
      `all ${counts.ok} usage rows in the ledger`,
      90_000,
    );
    expect(await ledgerRows("killed")).toBe(counts.ok);
  }, 300_000);
});
