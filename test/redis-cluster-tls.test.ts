import { rm } from "node:fs/promises";
import { createGrpcTransport } from "@connectrpc/connect-node";
import OpenAI, { toFile } from "openai";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createTestPki, type TestPki } from "./helpers/certificates.js";
import { chatClient, collect, textOf, userRequest } from "./helpers/clients.js";
import { type Harness, startHarness } from "./helpers/harness.js";
import { type OwnDatabase, ownDatabase } from "./helpers/postgres.js";
import { type OwnCluster, startOwnCluster } from "./helpers/redis-cluster.js";

/**
 * Issue 49, item 6: Redis Cluster over TLS (cluster bus and replication
 * too) as the ACL user of docs/deployment.md plus the cluster commands, the
 * default user off. The store, the ledger's consumer group, resumable
 * streams and the batch queue work, and no node's ACL LOG holds a denial
 * for the gateway's user.
 */
const PREFIX = "{sluice-tls}:";
const PASSWORD = "cluster-tls-password-9c1e3a5b7d";
const ADMIN_PASSWORD = "cluster-admin-password-4d6f8b0a2c";
const SLUICE_ACL = `on >${PASSWORD} resetchannels ~${PREFIX}* &${PREFIX}* -@all +@read +@write +@scripting +@pubsub +@connection +@transaction +@blocking +@keyspace -@dangerous +info +time +cluster|slots +cluster|shards +cluster|info`;
const KEY = "sk-test-cluster-tls-key-2e4a6c8b0d";

let pki: TestPki;
let cluster: OwnCluster;
let db: OwnDatabase;
let h: Harness;

beforeAll(async () => {
  pki = await createTestPki();
  // Nodes connect to each other (bus, replication) with a client certificate of the same CA.
  const tls = [
    ...["--tls-cert-file", pki.server.certFile, "--tls-key-file", pki.server.keyFile, "--tls-ca-cert-file", pki.ca.certFile, "--tls-auth-clients", "no"],
    ...["--tls-client-cert-file", pki.client.certFile, "--tls-client-key-file", pki.client.keyFile],
  ];
  cluster = await startOwnCluster({
    serverArgs: (port) => [
      ...["--port", "0", "--tls-port", String(port), "--tls-cluster", "yes", "--tls-replication", "yes", ...tls],
      ...["--user", "default", "off", "--user", "admin", "on", `>${ADMIN_PASSWORD}`, "~*", "&*", "+@all", "--masteruser", "admin", "--masterauth", ADMIN_PASSWORD],
      ...["--user", "sluice", ...SLUICE_ACL.split(" ")],
    ],
    cliArgs: ["--tls", "--cacert", pki.ca.certFile, "--user", "admin", "--pass", ADMIN_PASSWORD, "--no-auth-warning"],
  });
  db = await ownDatabase();
  const [first, ...rest] = cluster.ports.map((p) => `rediss://sluice:${PASSWORD}@127.0.0.1:${p}`);
  h = await startHarness({
    routing: (sim) => ({
      providers: { simulator: { kind: "openai", baseUrl: sim.openAiBaseUrl, breaker: { failures: 10_000 } } },
      models: { chat: { provider: "simulator", model: "sim-1?tokens=3", price: { inputPerMTok: 1, outputPerMTok: 2 } } },
    }),
    env: { KEY },
    auth: { tagKeys: ["batch_id"], keys: [{ name: "tls", keyEnv: "KEY", limits: { requestsPerMinute: 1_000 } }] },
    store: {
      redis: { url: first!, cluster: { nodes: rest.slice(0, 2) }, tls: { caFile: pki.ca.certFile }, prefix: PREFIX, failMode: "open", timeoutMs: 2_000 },
      postgres: { url: db.url, poolSize: 4 },
    },
    ledger: { flushMs: 60_000 },
    batch: { concurrency: 2 },
  });
  await h.waitForLog((l) => l.event === "store.connected", 60_000);
}, 240_000);

afterAll(async () => {
  await h?.close();
  await cluster?.stop();
  await db?.drop();
  if (pki) await rm(pki.dir, { recursive: true, force: true });
}, 60_000);

describe("Redis Cluster over TLS as an ACL user", () => {
  it("serves the store, the ledger's consumer group, resumable streams and the batch queue, with no ACL denial on any node", async () => {
    for (let i = 0; i < 5; i++) {
      const response = await fetch(`${h.url}/v1/chat/completions`, {
        method: "POST",
        headers: { authorization: `Bearer ${KEY}`, "content-type": "application/json" },
        body: JSON.stringify({ model: "chat", messages: [{ role: "user", content: "hello" }] }),
      });
      await response.arrayBuffer();
      expect(response.status).toBe(200);
    }
    const client = chatClient(createGrpcTransport({ baseUrl: h.url }));
    const headers = { headers: { authorization: `Bearer ${KEY}` } };
    const messages = await collect(client.streamChat(userRequest("chat", "resume me #sim tokens=8", { streamOptions: { resumable: true } }), headers));
    const id = messages[0]?.delta.case === "start" ? messages[0].delta.value.responseId : "";
    expect(textOf(await collect(client.resumeStream({ responseId: id }, headers)))).toBe(textOf(messages));
    const sdk = new OpenAI({ baseURL: `${h.url}/v1`, apiKey: KEY, maxRetries: 0 });
    const lines = Array.from({ length: 2 }, (_, i) => JSON.stringify({ custom_id: `line-${i}`, method: "POST", url: "/v1/chat/completions", body: { model: "chat", messages: [{ role: "user", content: `line ${i}` }] } })).join("\n");
    const file = await sdk.files.create({ file: await toFile(Buffer.from(lines), "lines.jsonl"), purpose: "batch" });
    const batch = await sdk.batches.create({ input_file_id: file.id, endpoint: "/v1/chat/completions", completion_window: "24h" });
    await h.sluice.batches.settled(batch.id);
    expect(await sdk.batches.retrieve(batch.id)).toMatchObject({ status: "completed", request_counts: { completed: 2 } });
    await h.sluice.ledger!.flush();
    const pgClient = new pg.Client({ connectionString: db.url });
    await pgClient.connect();
    try {
      expect((await pgClient.query("SELECT id FROM sluice_ledger WHERE key_name = 'tls'")).rowCount).toBe(5 + 1 + 2);
    } finally {
      await pgClient.end();
    }
    expect(h.logs().filter((l) => l.event === "store.rejected" || l.event === "store.error_reply" || l.event === "store.down")).toEqual([]);
    for (const port of cluster.ports) expect(await cluster.cli(port, "ACL", "LOG", "100")).not.toMatch(/username\nsluice\n/);
    expect(h.logText()).not.toContain(PASSWORD);
  }, 120_000);
});
