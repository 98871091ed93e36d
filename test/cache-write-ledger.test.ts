import { timestampFromMs } from "@bufbuild/protobuf/wkt";
import { PGlite } from "@electric-sql/pglite";
import { PGLiteSocketServer } from "@electric-sql/pglite-socket";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { SpendDimension } from "../gen/sluice/admin/v1/admin_service_pb.js";
import type { UsageRecord } from "../src/usage/usage-record.js";
import { adminClient } from "./helpers/admin.js";
import { messagesClient } from "./helpers/answer-via-messages.js";
import { baseUrlFor, type Harness, startHarness } from "./helpers/harness.js";
import { dropPrefix, freePort, SHARED_REDIS_URL, testPrefix } from "./helpers/redis.js";
import { tenancyEvents } from "./helpers/tenancy-events.js";

/**
 * Anthropic prompt-cache writes, charged at their own rate, from the wire
 * to the ledger: a call through the Messages edge to an Anthropic-wire
 * alias with `promptCache: auto` (the simulator caches as Anthropic does
 * and reports the writes split by lifetime) lands in the ledger with its
 * write count and its exact cost, with and without Redis's usage stream
 * between the gateway and the database (PGlite over the PostgreSQL wire).
 */

const KEY = "sk-test-cache-writes-5c7e9a1b3d";
const ADMIN = "sk-test-cache-writes-admin-8f0a";
/** $5 input, $25 output per million tokens; writes unset: Anthropic's 1.25x (5m) and 2x (1h) of input. */
const PRICE = { inputPerMTok: 5, outputPerMTok: 25 };
const OUTPUT_TOKENS = 2_745;
const DB_START_MS = 90_000;

let db: PGlite;
let server: PGLiteSocketServer;
let url = "";

beforeAll(async () => {
  db = await PGlite.create();
  const port = await freePort();
  url = `postgres://postgres@127.0.0.1:${port}/postgres`;
  server = new PGLiteSocketServer({ db, port, host: "127.0.0.1", maxConnections: 16 });
  await server.start();
}, DB_START_MS);
afterAll(async () => {
  await server.stop();
  await db.close();
});

/** A ledger row's columns (bigint columns as numbers or strings, by driver). */
type Row = Record<string, unknown>;

/** The simulator's token count (words). */
const words = (...texts: string[]) => texts.join(" ").split(/\s+/).filter(Boolean).length;

const prefix = testPrefix("cache-writes");
afterAll(() => dropPrefix(prefix));

const STORES = {
  "PostgreSQL only": () => ({ postgres: { url, poolSize: 2 } }),
  "Redis usage stream, then PostgreSQL": () => ({ redis: { url: SHARED_REDIS_URL, prefix, failMode: "closed" as const, timeoutMs: 5_000 }, postgres: { url, poolSize: 2 } }),
};

describe.each(Object.entries(STORES))("cache writes in the ledger (%s)", (name, store) => {
  let h: Harness;
  const events = tenancyEvents();
  // A key name per gateway: both write to one database, and the report below is of this one's calls.
  const keyName = `cache-writer-${name.startsWith("Redis") ? "redis" : "postgres"}`;
  beforeAll(async () => {
    h = await startHarness({
      routing: (sim) => ({
        providers: { claude: { kind: "anthropic", baseUrl: baseUrlFor(sim, "anthropic"), breaker: { failures: 10_000 } } },
        models: { claude: { provider: "claude", model: `sim-1?tokens=${OUTPUT_TOKENS}`, promptCache: "auto", price: PRICE } },
      }),
      env: { CACHE_KEY: KEY, ADMIN },
      auth: { adminKeyEnv: "ADMIN", keys: [{ name: keyName, keyEnv: "CACHE_KEY" }] },
      store: store(),
      ledger: { flushMs: 60_000 },
      observer: events.observer,
    });
  });
  afterAll(() => h.close());

  it("a call that writes the cache is charged 1.25x input for the writes, exactly, in the ledger row and the spend report", async () => {
    const startedAt = Date.now() - 1_000;
    // A system prompt whose write costs a fraction of a micro-dollar (words × 6.25 not a whole number), distinct per store.
    let system = `You answer questions about the ${name} manual. ${"Cite the section you read and nothing else. ".repeat(300)}`;
    const question = "Which section covers cache writes?";
    while (words(system, question) % 4 !== 1) system += " again";
    const { data: message, response } = await messagesClient(h.url, { apiKey: KEY })
      .messages.create({ model: "claude", max_tokens: 4_096, system, messages: [{ role: "user", content: question }] })
      .withResponse();

    // What the caller sees, as Anthropic's API says it: input_tokens without cache reads and writes, the writes split by lifetime.
    const written = words(system, question);
    expect(message.usage).toMatchObject({
      input_tokens: 0,
      cache_read_input_tokens: 0,
      cache_creation_input_tokens: written,
      cache_creation: { ephemeral_5m_input_tokens: written, ephemeral_1h_input_tokens: 0 },
      output_tokens: OUTPUT_TOKENS,
    });

    const record: UsageRecord = await events.recorded(response.headers.get("x-request-id")!);
    expect(record).toMatchObject({ inputTokens: written, cachedInputTokens: 0, cacheWrite5mTokens: written, outputTokens: OUTPUT_TOKENS });
    await h.sluice.ledger!.flush();
    const rows = (await db.query<Row>("SELECT * FROM sluice_ledger WHERE request_id = $1", [record.requestId])).rows;
    expect(rows).toHaveLength(1);
    const row = rows[0]!;
    // Writes at $6.25, output at $25 per million: exact in pico-dollars, rounded up to the micro-dollar budgets count.
    const picos = BigInt(written) * 6_250_000n + BigInt(OUTPUT_TOKENS) * 25_000_000n;
    expect(picos % 1_000_000n).not.toBe(0n);
    // Compared as text: bigint columns come back as numbers or strings by driver.
    const asText = Object.fromEntries(Object.entries(row).map(([k, v]) => [k, String(v)]));
    expect(asText).toMatchObject({
      input_tokens: String(written),
      cached_input_tokens: "0",
      cache_write_5m_tokens: String(written),
      cache_write_1h_tokens: "0",
      output_tokens: String(OUTPUT_TOKENS),
      cost_picos: String(picos),
      cost_micros: String((picos + 999_999n) / 1_000_000n),
    });

    // The spend report sums the writes and says the exact cost in dollars.
    const report = await adminClient(h.url, ADMIN).getSpendReport({ start: timestampFromMs(startedAt), end: timestampFromMs(Date.now() + 60_000), groupBy: [SpendDimension.KEY], filter: { keys: [keyName] } });
    expect(report.rows).toHaveLength(1);
    expect(Number(report.rows[0]!.cacheWrite5mTokens)).toBe(written);
    const dollars = picos / 1_000_000_000_000n;
    const fraction = (picos % 1_000_000_000_000n).toString().padStart(12, "0").replace(/0+$/, "");
    expect(report.rows[0]!.costUsd).toBe(`${dollars}.${fraction}`);
  });

  it("a streamed call's message_start carries the input the upstream stated up front (reads and writes as integers); message_delta the same input, cumulative, with the output", async () => {
    const system = `You summarise the ${name} changelog. ${"Keep every version number you read. ".repeat(300)}`;
    const client = messagesClient(h.url, { apiKey: KEY });
    const ask = async (question: string) => {
      const usages: Array<Record<string, unknown>> = [];
      for await (const event of await client.messages.create({ model: "claude", max_tokens: 4_096, system, messages: [{ role: "user", content: question }], stream: true })) {
        if (event.type === "message_start") usages.push({ ...event.message.usage });
        if (event.type === "message_delta") usages.push({ ...event.usage });
      }
      return usages;
    };
    await ask("What changed first?");
    // The second question reads the system prompt the first wrote, and writes itself.
    const [start, delta] = await ask("And what changed last?");
    const input = { input_tokens: 0, cache_read_input_tokens: words(system), cache_creation_input_tokens: words("And what changed last?") };
    expect(start).toMatchObject({ ...input, output_tokens: 0, cache_creation: { ephemeral_5m_input_tokens: input.cache_creation_input_tokens, ephemeral_1h_input_tokens: 0 } });
    expect(delta).toMatchObject({ ...input, output_tokens: OUTPUT_TOKENS });
    for (const usage of [start!, delta!]) for (const field of Object.keys(input)) expect(Number.isInteger(usage[field]), field).toBe(true);
  });
});
