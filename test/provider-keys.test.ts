import { PassThrough } from "node:stream";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type Sluice, startSluice } from "../src/app.js";
import { resolveConfig } from "../src/config/config.js";
import { createLogger } from "../src/logging/logger.js";
import { type Simulator, startSimulator } from "../src/simulator/server.js";
import { type AdminClient, adminClient } from "./helpers/admin.js";
import { type OwnDatabase, ownDatabase } from "./helpers/postgres.js";

/**
 * Provider keys set at run time, over real sockets: gateways on a real
 * PostgreSQL server, the simulator accepting only some OpenAI keys and
 * recording every key it was sent, and everything driven through the admin
 * API. One story in order: each step starts from what the last one left.
 */
const ADMIN_KEY = "sk-test-admin-5e1c9a7b3d2f4680";
const APP_KEY = "sk-test-app-8d2e4f6a0b1c3579";
const SEAL_SECRET = "provider-keys-seal-secret-0123456789abcdef";
const ENV_KEY = "sk-env-key-AAAAAAAAAAAAAAAAAAAAAAAA0001";
const GOOD_1 = "sk-good-key-BBBBBBBBBBBBBBBBBBBBBBBB0002";
const BAD = "sk-bad-key-CCCCCCCCCCCCCCCCCCCCCCCCC0003";
const GOOD_2 = "sk-good-key-DDDDDDDDDDDDDDDDDDDDDDDD0004";
const EVERY_KEY = [GOOD_1, BAD, GOOD_2];
const WAIT_MS = 60_000;

interface Gateway {
  readonly sluice: Sluice;
  readonly url: string;
  logText(): string;
  /** Resolves once a log line contains every one of `parts`; rejects after WAIT_MS. */
  waitForLog(...parts: string[]): Promise<void>;
}

async function gateway(sim: Simulator, db: OwnDatabase): Promise<Gateway> {
  const env = { SLUICE_ADMIN_KEY: ADMIN_KEY, APP_KEY, PROVIDER_SEAL: SEAL_SECRET, OPENAI_KEY: ENV_KEY };
  const config = resolveConfig(
    {
      log: { level: "debug" },
      auth: { adminKeyEnv: "SLUICE_ADMIN_KEY", keys: [{ name: "app", keyEnv: "APP_KEY" }] },
      store: { postgres: { url: db.url } },
      compliance: { audit: { flushMs: 20 } },
      mcp: { credentialsKeyEnv: "PROVIDER_SEAL" },
      providers: { upstream: { kind: "openai", baseUrl: sim.openAiBaseUrl, apiKeyEnv: "OPENAI_KEY", breaker: { failures: 10_000 } } },
      models: { sim: { provider: "upstream", model: "sim-1" }, embed: { provider: "upstream", model: "sim-embed" } },
    },
    env,
  );
  let text = "";
  const changed = new PassThrough();
  const sink = new PassThrough();
  sink.on("data", (chunk: Buffer) => {
    text += chunk.toString("utf8");
    changed.emit("line");
  });
  const sluice = await startSluice({ config, logger: createLogger("debug", sink), port: 0, env });
  const signal = AbortSignal.timeout(WAIT_MS);
  while (!sluice.server.health.ready) await sluice.server.health.changed(signal);
  return {
    sluice,
    url: sluice.server.url,
    logText: () => text,
    waitForLog: (...parts) =>
      new Promise((resolve, reject) => {
        const found = () => text.split("\n").some((line) => parts.every((part) => line.includes(part)));
        if (found()) return resolve();
        const timer = setTimeout(() => {
          changed.off("line", check);
          reject(new Error(`no log line with ${parts.join(", ")} within ${WAIT_MS} ms`));
        }, WAIT_MS);
        const check = () => {
          if (!found()) return;
          clearTimeout(timer);
          changed.off("line", check);
          resolve();
        };
        changed.on("line", check);
      }),
  };
}

/** One chat call through the gateway's OpenAI edge; its HTTP status. */
async function call(g: Gateway): Promise<number> {
  const response = await fetch(`${g.url}/v1/chat/completions`, {
    method: "POST",
    headers: { "content-type": "application/json", authorization: `Bearer ${APP_KEY}` },
    body: JSON.stringify({ model: "sim", messages: [{ role: "user", content: "hello" }] }),
    signal: AbortSignal.timeout(WAIT_MS),
  });
  await response.text();
  return response.status;
}

/** One embeddings call through the gateway's OpenAI edge; its HTTP status. */
async function embed(g: Gateway): Promise<number> {
  const response = await fetch(`${g.url}/v1/embeddings`, {
    method: "POST",
    headers: { "content-type": "application/json", authorization: `Bearer ${APP_KEY}` },
    body: JSON.stringify({ model: "embed", input: "hello" }),
    signal: AbortSignal.timeout(WAIT_MS),
  });
  await response.text();
  return response.status;
}

/** The keys the simulator was sent by `work`, in order. */
async function keysSentBy(sim: Simulator, work: () => Promise<unknown>): Promise<string[]> {
  const before = sim.keysSeen().length;
  await work();
  return sim.keysSeen().slice(before);
}

const json = (value: unknown) => JSON.stringify(value, (_, v: unknown) => (typeof v === "bigint" ? String(v) : v));

/** `read` until `done` says yes; every read is a real query, bounded by WAIT_MS. */
async function until<T>(read: () => Promise<T>, done: (value: T) => boolean): Promise<T> {
  const deadline = Date.now() + WAIT_MS;
  for (;;) {
    const value = await read();
    if (done(value)) return value;
    if (Date.now() > deadline) throw new Error(`not reached within ${WAIT_MS} ms: ${json(value)}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

describe("provider keys set at run time", () => {
  let db: OwnDatabase;
  let sim: Simulator;
  let a: Gateway;
  let b: Gateway;
  let admin: AdminClient;
  let raw: pg.Client;
  const gateways: Gateway[] = [];
  beforeAll(async () => {
    db = await ownDatabase();
    sim = await startSimulator({ acceptKeys: [ENV_KEY, GOOD_1, GOOD_2] });
    a = await gateway(sim, db);
    b = await gateway(sim, db);
    gateways.push(a, b);
    admin = adminClient(a.url, ADMIN_KEY);
    raw = new pg.Client({ connectionString: db.url });
    await raw.connect();
  }, 120_000);
  afterAll(async () => {
    await raw?.end();
    for (const g of gateways) await g.sluice.close();
    await sim?.close();
    await db?.drop();
  });

  it("serves on the apiKeyEnv key while no key is stored", async () => {
    expect(await keysSentBy(sim, async () => expect(await call(a)).toBe(200))).toEqual([ENV_KEY]);
    expect((await admin.listProviderKeys({})).keys).toEqual([]);
  });

  it("takes a stored key over apiKeyEnv once the provider accepts it", async () => {
    const set = await admin.setProviderKey({ provider: "upstream", apiKey: GOOD_1 });
    expect(set.key).toMatchObject({ provider: "upstream", state: "pending", fingerprint: "…0002" });
    expect(await keysSentBy(sim, async () => expect(await call(a)).toBe(200))).toEqual([GOOD_1]);
    await a.waitForLog("provider_key.activated", "…0002");
    const listed = (await admin.listProviderKeys({})).keys;
    expect(listed).toHaveLength(1);
    expect(listed[0]).toMatchObject({ provider: "upstream", state: "active", fingerprint: "…0002" });
    expect(listed[0]!.rotatedAt).toBeDefined();
    expect(await keysSentBy(sim, async () => expect(await call(a)).toBe(200))).toEqual([GOOD_1]);
  });

  it("keeps serving on the old key when the provider refuses the new one, and shows it rejected", async () => {
    await admin.setProviderKey({ provider: "upstream", apiKey: BAD });
    // The bad key is tried once; the same call goes again with the key in use, and the caller sees a success.
    expect(await keysSentBy(sim, async () => expect(await call(a)).toBe(200))).toEqual([BAD, GOOD_1]);
    await a.waitForLog("provider_key.rejected", "…0003", '"status":401');
    const listed = (await admin.listProviderKeys({})).keys;
    expect(listed.map((k) => [k.state, k.fingerprint, k.rejectedStatus])).toEqual([
      ["active", "…0002", 0],
      ["rejected", "…0003", 401],
    ]);
    // A rejected key is not tried again.
    expect(await keysSentBy(sim, async () => expect(await call(a)).toBe(200))).toEqual([GOOD_1]);
  });

  it("switches to a good new key and never sends the old one again", async () => {
    await admin.setProviderKey({ provider: "upstream", apiKey: GOOD_2 });
    expect(await keysSentBy(sim, async () => expect(await call(a)).toBe(200))).toEqual([GOOD_2]);
    await a.waitForLog("provider_key.activated", "…0004");
    expect((await admin.listProviderKeys({})).keys.map((k) => [k.state, k.fingerprint])).toEqual([["active", "…0004"]]);
    const after = await keysSentBy(sim, async () => {
      for (let i = 0; i < 3; i++) expect(await call(a)).toBe(200);
    });
    expect(after).toEqual([GOOD_2, GOOD_2, GOOD_2]);
    // Embeddings go through the same client, with the same key.
    expect(await keysSentBy(sim, async () => expect(await embed(a)).toBe(200))).toEqual([GOOD_2]);
  });

  it("is picked up by a second gateway on the same database without a restart", async () => {
    await b.waitForLog("provider_key.loaded", "active …0004");
    expect(await keysSentBy(sim, async () => expect(await call(b)).toBe(200))).toEqual([GOOD_2]);
  });

  it("never shows a key in plaintext: not in list answers, logs, audit rows or the database row", async () => {
    const listed = json(await admin.listProviderKeys({}));
    const rows = json((await raw.query("SELECT * FROM sluice_provider_keys")).rows);
    expect(rows).toContain("…0004");
    const audit = await until(
      async () => (await raw.query("SELECT action, target, details FROM sluice_audit WHERE action LIKE 'provider_key.%' ORDER BY seq")).rows as Array<{ action: string; target: string }>,
      (found) => found.filter((r) => r.action === "provider_key.set").length >= 3 && found.some((r) => r.action === "provider_key.reject"),
    );
    expect(audit.map((r) => r.target)).toContain("upstream");
    const everything = [listed, rows, json(audit), ...gateways.map((g) => g.logText())];
    for (const text of everything) for (const key of EVERY_KEY) expect(text).not.toContain(key);
    for (const key of EVERY_KEY) expect(text(everything)).not.toContain(key.slice(0, -4));
  });

  it("keeps the stored key across a restart", async () => {
    await b.sluice.close();
    gateways.splice(gateways.indexOf(b), 1);
    const restarted = await gateway(sim, db);
    gateways.push(restarted);
    expect(await keysSentBy(sim, async () => expect(await call(restarted)).toBe(200))).toEqual([GOOD_2]);
  });

  it("refuses what it cannot store: an unknown provider, a bad key, no admin key", async () => {
    await expect(admin.setProviderKey({ provider: "nowhere", apiKey: GOOD_1 })).rejects.toMatchObject({ code: 5 });
    await expect(admin.setProviderKey({ provider: "upstream", apiKey: "short" })).rejects.toMatchObject({ code: 3 });
    await expect(adminClient(a.url).listProviderKeys({})).rejects.toMatchObject({ code: 16 });
  });
});

const text = (parts: readonly string[]) => parts.join("\n");
