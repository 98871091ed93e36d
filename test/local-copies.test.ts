import OpenAI from "openai";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { adminClient } from "./helpers/admin.js";
import { type Harness, startHarness } from "./helpers/harness.js";
import { type OwnDatabase, ownDatabase } from "./helpers/postgres.js";
import { tenancyEvents } from "./helpers/tenancy-events.js";

/**
 * Issue #43 item 1, over real sockets and a real PostgreSQL: a call kept on
 * local targets for any reason (its key's team, its alias, its key's
 * `pii: local-only` with or without findings) is never mirrored to a
 * shadow candidate, never recorded for replay, and never replayed by an
 * evaluation, even from a recording made before (a row planted as an older
 * version kept it). The cloud target of the simulator (`sim-cloud`)
 * receives none of those prompts; a plain key's call on the same alias is
 * mirrored and recorded, so each assertion can fail.
 */
const ADMIN = "sk-test-local-admin-4b7d1e9a3c5f2068";
const CALLER = "sk-test-local-caller-8e2a6c0f4b1d3579";
const HR = "sk-test-local-hr-1c5e9a3f7b2d4680";
const SUPPORT = "sk-test-local-support-6a0c4e8b2d1f3579";
const EVALUATOR = "sk-test-local-evaluator-3f7b1d5a9c0e2468";
const EMAIL = "bob.payroll@example.com";

let database: OwnDatabase;
let h: Harness;
const events = tenancyEvents();

beforeAll(async () => {
  database = await ownDatabase();
  h = await startHarness({
    routing: (sim) => ({
      providers: {
        cloud: { kind: "openai", baseUrl: sim.openAiBaseUrl, breaker: { failures: 10_000 } },
        onprem: { kind: "openai", baseUrl: sim.openAiBaseUrl, local: true, breaker: { failures: 10_000 } },
      },
      models: {
        assistant: {
          provider: "onprem",
          model: "sim-local?tokens=3",
          record: { sampleRate: 1, maxPerDay: 10_000 },
          shadow: { alias: "cloudy", sampleRate: 1, key: "evaluator", maxInFlight: 100 },
        },
        resident: {
          provider: "onprem",
          model: "sim-local?tokens=3",
          localOnly: true,
          record: { sampleRate: 1, maxPerDay: 10_000 },
          shadow: { alias: "cloudy", sampleRate: 1, key: "evaluator", maxInFlight: 100 },
        },
        cloudy: { provider: "cloud", model: "sim-cloud?tokens=3" },
      },
    }),
    env: { ADMIN, CALLER, HR, SUPPORT, EVALUATOR },
    auth: {
      adminKeyEnv: "ADMIN",
      teams: [{ name: "hr", localOnly: true }],
      keys: [
        { name: "caller", keyEnv: "CALLER" },
        { name: "hr-bot", keyEnv: "HR", team: "hr" },
        { name: "support", keyEnv: "SUPPORT", pii: { mode: "local-only" } },
        { name: "evaluator", keyEnv: "EVALUATOR" },
      ],
    },
    store: { postgres: { url: database.url, poolSize: 4 } },
    batch: { concurrency: 2 },
    observer: events.observer,
  });
});

afterAll(async () => {
  await h?.close();
  await database?.drop();
});

const ask = (key: string, model: string, tag: string, text = "what is on the agenda?") =>
  new OpenAI({ baseURL: `${h.url}/v1`, apiKey: key, maxRetries: 0 }).chat.completions.create({ model, max_tokens: 16, messages: [{ role: "user", content: `#sim tag=${tag}\n${text}` }] });

/** Tags of what the cloud target received. */
const cloudTags = () =>
  h.sim.records
    .all()
    .filter((r) => r.model.startsWith("sim-cloud"))
    .map((r) => r.tag ?? "");

async function rows<T extends pg.QueryResultRow>(sql: string, params: unknown[] = []): Promise<T[]> {
  const client = new pg.Client({ connectionString: database.url });
  await client.connect();
  try {
    return (await client.query<T>(sql, params)).rows;
  } finally {
    await client.end();
  }
}

describe("calls kept local are never copied elsewhere", () => {
  it("shadow and recording: a local team's key, a local-only alias, a key whose PII policy is local-only (with and without findings)", async () => {
    await Promise.all([
      ask(HR, "assistant", "local-hr"),
      ask(CALLER, "resident", "local-resident"),
      ask(SUPPORT, "assistant", "local-support-clean"),
      ask(SUPPORT, "assistant", "local-support-pii", `mail ${EMAIL} the payslip`),
      ask(CALLER, "assistant", "plain-caller"),
    ]);
    await h.sluice.shadow.idle();
    await h.sluice.recorder.flush();

    // The plain call was mirrored: the shadow works, and is what the other calls do not get.
    expect(cloudTags()).toEqual(["plain-caller"]);
    const kept = await rows<{ request: string; key_name: string }>("SELECT request, key_name FROM sluice_recordings");
    expect(kept.map((r) => r.key_name)).toEqual(["caller"]);
    expect(kept[0]!.request).toContain("plain-caller");
    const mirrored = await rows<{ request: string }>("SELECT request FROM sluice_shadow");
    expect(mirrored.map((r) => JSON.parse(r.request).messages[0].content[0].text as string)).toEqual([expect.stringContaining("plain-caller")]);
    // Every local call was answered, by the local target.
    const local = h.sim.records.all().filter((r) => r.tag?.startsWith("local-"));
    expect(local).toHaveLength(4);
    expect(local.every((r) => r.model.startsWith("sim-local"))).toBe(true);
  });

  it("the ledger says which calls a local target served and what personal data was found (counts, never values)", async () => {
    // The five calls of the test before and the one mirrored call, settled.
    await events.until(() => events.usage.length >= 6);
    await h.sluice.ledger!.flush();
    const ledger = await rows<{ key_name: string; alias: string; local: boolean; pii: Record<string, number> | null }>("SELECT key_name, alias, local, pii FROM sluice_ledger");
    const of = (key: string, alias: string) => ledger.filter((r) => r.key_name === key && r.alias === alias);
    expect(of("hr-bot", "assistant")).toEqual([{ key_name: "hr-bot", alias: "assistant", local: true, pii: null }]);
    expect(
      of("support", "assistant")
        .map((r) => r.pii)
        .sort(),
    ).toEqual([{ email: 1 }, null]);
    expect(of("support", "assistant").every((r) => r.local)).toBe(true);
    // The mirrored call ran on the cloud candidate, as the shadow key.
    expect(of("evaluator", "cloudy")).toEqual([{ key_name: "evaluator", alias: "cloudy", local: false, pii: null }]);
    expect(JSON.stringify(ledger)).not.toContain(EMAIL);
  });

  it("evaluation: recordings of local keys or aliases, even ones an older version kept, are never put in a dataset nor replayed to a cloud candidate", async () => {
    await h.sluice.recorder.flush();
    const before = cloudTags().length;
    // What an older version kept: an hr call recorded on `assistant`, and one on the local-only alias.
    const legacy = (id: string, alias: string, key: string, tag: string) =>
      rows("INSERT INTO sluice_recordings (id, at, alias, key_name, tags, request, answer) VALUES ($1, now(), $2, $3, '{}'::jsonb, $4, $5)", [
        id,
        alias,
        key,
        JSON.stringify({ model: alias, messages: [{ role: "user", content: [{ type: "text", text: `#sim tag=${tag}\nHR: Bob's salary review` }] }], tools: [], sampling: { stop: [] }, metadata: { labels: {} } }),
        JSON.stringify({ text: "noted", toolCalls: [], finishReason: "stop", usage: { inputTokens: 5, outputTokens: 1, cachedInputTokens: 0, reasoningTokens: 0 }, costMicros: 0, durationMs: 5, target: "onprem/sim-local" }),
      ]);
    await legacy("legacy-hr", "assistant", "hr-bot", "local-legacy-hr");
    await legacy("legacy-resident", "resident", "caller", "local-legacy-resident");

    const admin = adminClient(h.url, ADMIN);
    const dataset = await admin.createDataset({ name: "assistant-all", alias: "assistant" });
    expect(dataset.size).toBe(1);
    await expect(admin.createDataset({ name: "resident-all", alias: "resident" })).rejects.toMatchObject({ rawMessage: expect.stringContaining("local-only") });

    // A dataset an older version made, holding the local recordings as well.
    await rows("INSERT INTO sluice_datasets (name, description) VALUES ('legacy', '')");
    await rows("INSERT INTO sluice_dataset_items (dataset, recording_id) SELECT 'legacy', id FROM sluice_recordings");
    const started = await admin.startEvaluation({ dataset: "legacy", candidates: ["cloudy"], key: "evaluator" });
    expect(started.size).toBe(1);
    await Promise.all(Object.values(started.batches).map((id) => h.sluice.batches.settled(id)));
    expect(cloudTags().slice(before)).toEqual(["plain-caller"]);

    await rows("INSERT INTO sluice_datasets (name, description) VALUES ('legacy-local', '')");
    await rows("INSERT INTO sluice_dataset_items (dataset, recording_id) VALUES ('legacy-local', 'legacy-hr'), ('legacy-local', 'legacy-resident')");
    await expect(admin.startEvaluation({ dataset: "legacy-local", candidates: ["cloudy"], key: "evaluator" })).rejects.toMatchObject({ rawMessage: expect.stringContaining("local-only") });
    expect(cloudTags().filter((tag) => tag.startsWith("local-"))).toEqual([]);
  });
});
