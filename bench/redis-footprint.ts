import { execFileSync } from "node:child_process";
import { mkdtemp, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { stringify } from "yaml";
import { BENCH_TIMEOUTS, GATEWAY_NODE_FLAGS, listeningUrl } from "./gateway-launch.js";
import { startUntil } from "./procs.js";
import { log, startRedis } from "./services.js";
import { round } from "./stats.js";

/**
 * What Redis holds per tenant, for docs/deployment.md's requirements
 * (`node dist/bench/redis-footprint.js [keys]`, after `npm run build`): a
 * redis-server of its own, a simulator and a gateway on it with the admin
 * service; `keys` runtime keys (limits and a budget each) made through
 * AdminService, then one call per key. Redis's `used_memory` is read after
 * each step, and the usage stream's own size per record. Loopback only;
 * stops by itself.
 */
const KEYS = Number(process.argv[2] ?? 1_000);
const ADMIN_KEY = "sk-admin-footprint-0123456789abcdef";
const PREFIX = "sluice-footprint:";

async function main(): Promise<void> {
  const { redis, redisPort } = await startRedis();
  if (!redis) throw new Error("needs redis-server on PATH: a Redis of its own, so that used_memory is this gateway's alone");
  const cli = (...args: string[]) => execFileSync("redis-cli", ["-p", String(redisPort), ...args], { encoding: "utf8" }).trim();
  const used = () => Number(/used_memory:(\d+)/.exec(cli("INFO", "memory"))![1]);
  const { proc: sim, value: simInfo } = await startUntil(process.execPath, ["dist/src/simulator/main.js", "--port", "0"], (line) =>
    line.startsWith("{") && line.includes("simulator listening") ? (JSON.parse(line) as { openAiBaseUrl: string }) : undefined,
  );
  const dir = await mkdtemp(join(tmpdir(), "sluice-footprint-"));
  const configFile = join(dir, "sluice.yaml");
  await writeFile(
    configFile,
    stringify({
      log: { level: "info" },
      providers: { sim: { kind: "openai", baseUrl: simInfo.openAiBaseUrl, timeouts: BENCH_TIMEOUTS } },
      models: { bench: { provider: "sim", model: "sim-1", price: { inputPerMTok: 1, outputPerMTok: 2 } } },
      auth: { adminKeyEnv: "FOOTPRINT_ADMIN_KEY" },
      store: { redis: { url: `redis://127.0.0.1:${redisPort}`, prefix: PREFIX, failMode: "closed" } },
    }),
  );
  const { proc: gateway, value: url } = await startUntil(process.execPath, [...GATEWAY_NODE_FLAGS, "dist/src/main.js", "--config", configFile, "--port", "0"], listeningUrl, {
    env: { ...process.env, FOOTPRINT_ADMIN_KEY: ADMIN_KEY },
  });
  try {
    const idle = used();
    const secrets: string[] = [];
    for (let i = 0; i < KEYS; i++) {
      const res = await fetch(`${url}/sluice.admin.v1.AdminService/CreateKey`, {
        method: "POST",
        headers: { "content-type": "application/json", authorization: `Bearer ${ADMIN_KEY}` },
        body: JSON.stringify({ name: `tenant-${i}`, limits: { requestsPerMinute: 1_000, tokensPerMinute: 1_000_000, concurrentStreams: 10 }, budget: { usdMicros: "25000000", period: "PERIOD_MONTH" } }),
      });
      if (!res.ok) throw new Error(`CreateKey: HTTP ${res.status}: ${(await res.text()).slice(0, 300)}`);
      secrets.push(((await res.json()) as { key: string }).key);
    }
    const withKeys = used();
    let failed = 0;
    // Eight at a time: a call per key, as a quiet tenant makes in a minute.
    for (let i = 0; i < secrets.length; i += 8) {
      await Promise.all(
        secrets.slice(i, i + 8).map(async (secret) => {
          const res = await fetch(`${url}/v1/chat/completions`, {
            method: "POST",
            headers: { "content-type": "application/json", authorization: `Bearer ${secret}` },
            body: JSON.stringify({ model: "bench", messages: [{ role: "user", content: "#sim tokens=20" }], max_tokens: 50 }),
          });
          if (!res.ok) failed++;
          await res.arrayBuffer();
        }),
      );
    }
    const usageKey = `${PREFIX}usage`;
    // A settle is written after the answer went out: wait, bounded, until every call's record is in the stream.
    const deadline = Date.now() + 30_000;
    while (Number(cli("XLEN", usageKey)) < KEYS - failed && Date.now() < deadline) await new Promise((r) => setTimeout(r, 100)); // polling Redis, bounded
    const records = Number(cli("XLEN", usageKey));
    const streamBytes = Number(cli("MEMORY", "USAGE", usageKey, "SAMPLES", "0"));
    const afterCalls = used();
    const result = {
      keys: KEYS,
      failedCalls: failed,
      usageRecords: records,
      bytesPerRuntimeKey: round((withKeys - idle) / KEYS, 0),
      bytesPerKeyAfterOneCall: round((afterCalls - withKeys) / KEYS, 0),
      usageStreamBytesPerRecord: round(streamBytes / Math.max(1, records), 0),
      redisKeys: Number(cli("DBSIZE")),
      // Less redis-cli's own connection, which INFO counts.
      gatewayConnections: Number(/connected_clients:(\d+)/.exec(cli("INFO", "clients"))![1]) - 1,
    };
    log(`redis footprint: ${JSON.stringify(result)}`);
    process.stdout.write(`${JSON.stringify(result)}\n`);
  } finally {
    await gateway.stop();
    await sim.stop();
    await redis.stop();
  }
}

main().catch((error: unknown) => {
  process.stderr.write(`redis-footprint failed: ${error instanceof Error ? error.stack : String(error)}\n`);
  process.exit(1);
});
