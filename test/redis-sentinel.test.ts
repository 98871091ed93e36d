import { type ChildProcess, execFile, spawn } from "node:child_process";
import { once } from "node:events";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type Harness, startHarness } from "./helpers/harness.js";
import { type OwnDatabase, ownDatabase } from "./helpers/postgres.js";
import { adopt } from "./helpers/processes.js";
import { freePort } from "./helpers/redis.js";
import { until } from "./helpers/redis-cluster.js";

const run = promisify(execFile);

/**
 * Issue 49, item 6: a gateway that finds its primary through Sentinel
 * (Debian's redis-server in sentinel mode, one Sentinel, quorum 1) keeps
 * its limits within twice the limit and loses no usage record through a
 * `SENTINEL FAILOVER` under traffic.
 */
const KEY = "sk-test-sentinel-key-5b7d9f1a3c";
const LIMIT = 60;
const PREFIX = "sluice-sentinel:";

let dir: string;
const children: ChildProcess[] = [];
let ports: { primary: number; replica: number; sentinel: number };
let db: OwnDatabase;
let h: Harness;

async function launch(args: readonly string[], readyLine: string): Promise<ChildProcess> {
  const child = adopt(spawn("redis-server", args, { stdio: ["ignore", "pipe", "pipe"], cwd: dir }));
  children.push(child);
  let out = "";
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`redis-server ${args.join(" ")} not ready within 60 s: ${out}`)), 60_000);
    child.stdout!.on("data", (d: Buffer) => {
      out += d.toString();
      if (out.includes(readyLine)) {
        clearTimeout(timer);
        resolve();
      }
    });
    child.once("exit", (code) => reject(new Error(`redis-server exited with ${code}: ${out}`)));
  });
  return child;
}

const cli = async (port: number, ...args: string[]) => (await run("redis-cli", ["-h", "127.0.0.1", "-p", String(port), ...args], { timeout: 30_000 })).stdout.trim();
const primaryPort = async () => Number((await cli(ports.sentinel, "SENTINEL", "GET-MASTER-ADDR-BY-NAME", "mymaster")).split("\n")[1]);

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), "sluice-sentinel-"));
  ports = { primary: await freePort(), replica: await freePort(), sentinel: await freePort() };
  const common = ["--bind", "127.0.0.1", "--save", "", "--appendonly", "no", "--dir", dir];
  await launch(["--port", String(ports.primary), ...common], "Ready to accept connections");
  await launch(["--port", String(ports.replica), "--replicaof", "127.0.0.1", String(ports.primary), ...common], "Ready to accept connections");
  const conf = join(dir, "sentinel.conf");
  await writeFile(
    conf,
    [`port ${ports.sentinel}`, "bind 127.0.0.1", `dir ${dir}`, `sentinel monitor mymaster 127.0.0.1 ${ports.primary} 1`, "sentinel down-after-milliseconds mymaster 2000", "sentinel failover-timeout mymaster 20000", ""].join("\n"),
  );
  await launch([conf, "--sentinel"], "+monitor master mymaster");
  // Sentinel learns of the replica from the primary's INFO (every 10 s): a failover needs it known and in sync.
  await until(async () => (await cli(ports.sentinel, "SENTINEL", "REPLICAS", "mymaster")).includes(String(ports.replica)), "the Sentinel knows the replica", 60_000);
  await until(async () => (await cli(ports.replica, "INFO", "replication")).includes("master_link_status:up"), "the replica in sync", 60_000);
  db = await ownDatabase();
  h = await startHarness({
    routing: (sim) => ({
      providers: { simulator: { kind: "openai", baseUrl: sim.openAiBaseUrl, breaker: { failures: 10_000 } } },
      models: { chat: { provider: "simulator", model: "sim-1?tokens=3", price: { inputPerMTok: 1, outputPerMTok: 2 } } },
    }),
    env: { KEY },
    auth: { keys: [{ name: "sentinel", keyEnv: "KEY", limits: { requestsPerMinute: LIMIT } }] },
    store: {
      redis: { url: `redis://127.0.0.1:${ports.sentinel}`, sentinel: { name: "mymaster" }, prefix: PREFIX, failMode: "open", timeoutMs: 2_000 },
      postgres: { url: db.url, poolSize: 4 },
    },
    ledger: { flushMs: 60_000 },
  });
  await h.waitForLog((l) => l.event === "store.connected", 60_000);
}, 180_000);

afterAll(async () => {
  await h?.close();
  await Promise.all(
    children.map(async (child) => {
      if (child.exitCode !== null || child.signalCode !== null) return;
      const exited = once(child, "exit");
      process.kill(child.pid!, "SIGKILL");
      await exited;
    }),
  );
  await db?.drop();
  if (dir) await rm(dir, { recursive: true, force: true });
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
    return (await client.query("SELECT id FROM sluice_ledger WHERE key_name = 'sentinel'")).rowCount ?? 0;
  } finally {
    await client.end();
  }
}

describe("a gateway behind Redis Sentinel", () => {
  it("keeps every usage record and a key's admissions within twice its limit through a Sentinel failover under traffic", async () => {
    expect(await primaryPort()).toBe(ports.primary);
    const counts = { ok: 0, refused: 0, other: 0, refusedAfterSwitch: 0 };
    let switched = false;
    let promotionMs = 0;
    const deadline = Date.now() + 90_000;
    const worker = async () => {
      while (Date.now() < deadline && !(switched && counts.refusedAfterSwitch >= 10)) {
        const status = await chat();
        if (status === 200) counts.ok++;
        else if (status === 429) {
          counts.refused++;
          if (switched) counts.refusedAfterSwitch++;
        } else counts.other++;
      }
    };
    const failover = (async () => {
      await until(async () => counts.ok >= LIMIT / 3, "traffic before the failover");
      const asked = performance.now();
      await cli(ports.sentinel, "SENTINEL", "FAILOVER", "mymaster");
      await until(async () => (await primaryPort()) === ports.replica && (await cli(ports.replica, "ROLE")).startsWith("master"), "the replica promoted", 60_000);
      promotionMs = Math.round(performance.now() - asked);
      switched = true;
    })();
    await Promise.all([worker(), worker(), worker(), worker(), failover]);
    console.info(`sentinel failover under traffic: ${JSON.stringify({ ...counts, limit: LIMIT, storeDownEvents: h.logs().filter((l) => l.event === "store.down").length, promotionMs })}`);
    expect(switched).toBe(true);
    expect(counts.other).toBe(0);
    expect(counts.ok).toBeGreaterThanOrEqual(LIMIT);
    expect(counts.ok).toBeLessThanOrEqual(2 * LIMIT);
    await until(
      async () => {
        await h.sluice.ledger!.flush();
        return (await ledgerRows()) === counts.ok;
      },
      `all ${counts.ok} usage rows in the ledger`,
      60_000,
    );
    expect(await ledgerRows()).toBe(counts.ok);
    // The gateway writes to the new primary now.
    expect(Number(await cli(ports.replica, "DBSIZE"))).toBeGreaterThan(0);
  }, 240_000);
});
