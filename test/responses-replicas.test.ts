import OpenAI from "openai";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { sha256Hex } from "../src/config/key-hash.js";
import type { ConfigInput } from "../src/config/schema.js";
import { type Simulator, startSimulator } from "../src/simulator/server.js";
import { type GatewayProcess, startGatewayProcess } from "./helpers/gateway-process.js";
import { FAR_TIMEOUTS } from "./helpers/harness.js";
import { type OwnDatabase, ownDatabase } from "./helpers/postgres.js";
import { dropPrefix, SHARED_REDIS_URL, testPrefix } from "./helpers/redis.js";

/**
 * Issue #46: state that survives the replica that made it. Two gateway
 * processes share one PostgreSQL server (and Redis, for background runs'
 * events): a response stored through A is read, referenced and continued
 * through B, a conversation grows on both, and a background run started on
 * A is followed and replayed on B.
 */

const KEY = "sk-test-replicas-responses-3b8e1d7c5a";
const prefix = testPrefix("responses-replicas");
let sim: Simulator;
let db: OwnDatabase;
let a: GatewayProcess;
let b: GatewayProcess;

function configFor(url: string): ConfigInput {
  return {
    log: { level: "info" },
    providers: { simulator: { kind: "openai", baseUrl: sim.openAiBaseUrl, timeouts: FAR_TIMEOUTS } },
    models: { sim: { provider: "simulator", model: "sim-1?tokens=6" } },
    auth: { keys: [{ name: "owner", sha256: sha256Hex(KEY) }] },
    store: { redis: { url: SHARED_REDIS_URL, prefix, failMode: "closed", timeoutMs: 5_000 }, postgres: { url } },
  };
}

beforeAll(async () => {
  sim = await startSimulator();
  db = await ownDatabase();
  [a, b] = await Promise.all([startGatewayProcess(configFor(db.url)), startGatewayProcess(configFor(db.url))]);
  await Promise.all([a, b].map((g) => g.waitForLine((l) => l.event === "resume.connected")));
}, 120_000);
afterAll(async () => {
  await Promise.all([a, b].filter(Boolean).map((g) => g.stop()));
  await sim?.close();
  await db?.drop();
  await dropPrefix(prefix);
});

const sdk = (g: GatewayProcess) => new OpenAI({ baseURL: `${g.url}/v1`, apiKey: KEY, maxRetries: 0 });

describe("stored responses across gateway processes sharing PostgreSQL", () => {
  it("a response stored through A is read, listed, referenced and continued through B", async () => {
    const first = await sdk(a).responses.create({ model: "sim", input: "the word is periwinkle" });
    expect((await sdk(b).responses.retrieve(first.id)).output).toEqual(first.output);
    expect((await sdk(b).responses.inputItems.list(first.id)).data).toHaveLength(1);
    const tag = `replicas-${first.id.slice(-6)}`;
    const next = await sdk(b).responses.create({ model: "sim", input: `#sim tag=${tag}\nwhat was the word?`, previous_response_id: first.id });
    expect(next.previous_response_id).toBe(first.id);
    const sent = JSON.stringify((await sim.records.waitFor((r) => r.tag === tag, 30_000)).body);
    expect(sent).toContain("periwinkle");
    const byReference = `replicas-ref-${first.id.slice(-6)}`;
    await sdk(a).responses.create({
      model: "sim",
      input: [
        { type: "item_reference", id: first.output[0]!.id! },
        { role: "user", content: `#sim tag=${byReference}\nagain` },
      ],
    });
    expect(JSON.stringify((await sim.records.waitFor((r) => r.tag === byReference, 30_000)).body)).toContain(JSON.stringify(first.output_text).slice(1, -1));
    await sdk(b).responses.delete(first.id);
    await expect(sdk(a).responses.retrieve(first.id)).rejects.toMatchObject({ status: 404 });
  });

  it("a conversation grows through both, and a background run started on A is followed and replayed on B", async () => {
    const conversation = await sdk(a).conversations.create({ items: [{ type: "message", role: "user", content: "remember marigold" }] });
    await sdk(b).responses.create({ model: "sim", input: "noted?", conversation: conversation.id });
    expect((await sdk(a).conversations.items.list(conversation.id, { order: "asc" })).data.length).toBeGreaterThanOrEqual(3);
    const queued = await sdk(a).responses.create({ model: "sim", input: "a background question", background: true });
    expect(queued.status).toBe("queued");
    const events: string[] = [];
    for await (const event of await sdk(b).responses.retrieve(queued.id, { stream: true, starting_after: 0 })) events.push(event.type);
    expect(events.at(-1)).toBe("response.completed");
    expect((await sdk(b).responses.retrieve(queued.id)).status).toBe("completed");
  });
});
