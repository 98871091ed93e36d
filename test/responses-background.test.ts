import { createHash } from "node:crypto";
import OpenAI, { APIError } from "openai";
import type { ResponseStreamEvent } from "openai/resources/responses/responses";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { CallLayer } from "../src/call/call-layer.js";
import { createBackgroundRuns } from "../src/edges/responses/background-runs.js";
import { newResponseId } from "../src/response-state/response-ids.js";
import type { StoredResponse } from "../src/response-state/stored-response.js";
import { keyId, type Principal } from "../src/tenancy/principal.js";
import { FAR_TIMEOUTS, type Harness, startHarness } from "./helpers/harness.js";
import { tenancyEvents } from "./helpers/tenancy-events.js";

const KEY_A = "sk-background-a-0123456789";
const KEY_B = "sk-background-b-0123456789";
const KEY_BROKE = "sk-background-broke-0123456789";
const PRICE = { inputPerMTok: 1_000, outputPerMTok: 2_000 };
const ownerOf = (key: string) => keyId(createHash("sha256").update(key).digest("hex"));

const events = tenancyEvents();
let h: Harness;
let a: OpenAI;
let b: OpenAI;
beforeAll(async () => {
  h = await startHarness({
    routing: (sim) => ({
      providers: { simulator: { kind: "openai", baseUrl: sim.openAiBaseUrl, breaker: { failures: 10_000 }, timeouts: FAR_TIMEOUTS } },
      models: { sim: { provider: "simulator", model: "sim-1", price: PRICE } },
    }),
    env: { KEY_A, KEY_B, KEY_BROKE },
    auth: {
      keys: [
        { name: "a", keyEnv: "KEY_A" },
        { name: "b", keyEnv: "KEY_B" },
        { name: "broke", keyEnv: "KEY_BROKE", budget: { usd: 0.01, period: "month" } },
      ],
    },
    observer: events.observer,
  });
  const client = (apiKey: string) => new OpenAI({ baseURL: `${h.url}/v1`, apiKey, maxRetries: 0 });
  a = client(KEY_A);
  b = client(KEY_B);
});
afterAll(async () => {
  await h?.close();
});

let tags = 0;
const nextTag = () => `bg-${process.pid}-${++tags}`;
const held = (tag: string) => h.sim.records.waitFor((r) => r.tag === tag && r.heldAt !== undefined, 30_000);

/** Every event of a background response's stream after `startingAfter`, to its end. */
async function eventsOf(client: OpenAI, id: string, startingAfter?: number): Promise<ResponseStreamEvent[]> {
  const stream = await client.responses.retrieve(id, { stream: true, ...(startingAfter !== undefined ? { starting_after: startingAfter } : {}) });
  const events: ResponseStreamEvent[] = [];
  for await (const event of stream) events.push(event);
  return events;
}

/** An event with its response's completed_at left out. */
const withoutEnd = (event: ResponseStreamEvent): unknown => ("response" in event ? { ...event, response: { ...event.response, completed_at: undefined } } : event);

const statusOf = async (promise: Promise<unknown>): Promise<number | undefined> => {
  try {
    await promise;
    return 200;
  } catch (error) {
    return error instanceof APIError ? error.status : undefined;
  }
};

const plant = (record: Omit<StoredResponse, "owner" | "createdAt" | "input">, key: string) => h.sluice.responseState!.store.put({ owner: ownerOf(key), createdAt: Math.floor(Date.now() / 1000), input: [], ...record }, 60_000);

describe("background responses", () => {
  it("returns queued at once, runs on the gateway, and retrieve shows it completed", async () => {
    const created = await a.responses.create({ model: "sim", input: "#sim tokens=6 seed=3", background: true });
    expect(created).toMatchObject({ object: "response", status: "queued", background: true, store: true, output: [] });
    // Waiting on the run's own stream, not a clock: it ends when the run does.
    const events = await eventsOf(a, created.id);
    expect(events.at(-1)?.type).toBe("response.completed");
    const done = await a.responses.retrieve(created.id);
    expect(done.status).toBe("completed");
    expect(done.id).toBe(created.id);
    expect(done.output_text.length).toBeGreaterThan(0);
    const completed = events.at(-1) as Extract<ResponseStreamEvent, { type: "response.completed" }>;
    expect(done.output_text).toBe(completed.response.output_text ?? done.output_text);
    expect(done.output).toEqual(completed.response.output);
  });

  it("the run is charged once, to the key that created it, under the creating call's request id", async () => {
    const { data: created, response } = await a.responses.create({ model: "sim", input: "#sim tokens=5 seed=11", background: true, store: true }).withResponse();
    const requestId = response.headers.get("x-request-id")!;
    expect(created.status).toBe("queued");
    await eventsOf(a, created.id);
    const record = await events.recorded(requestId);
    expect(record).toMatchObject({ keyId: ownerOf(KEY_A) });
    expect(record.costMicros).toBeGreaterThan(0);
    // Replays and reads are no calls: still the one record.
    await eventsOf(a, created.id, 2);
    await a.responses.retrieve(created.id);
    expect(events.usage.filter((e) => e.record.requestId === requestId)).toHaveLength(1);
  });

  it("streams the events after starting_after, the stored ones then the live ones, numbered as the original", async () => {
    const tag = nextTag();
    const created = await a.responses.create({ model: "sim", input: `#sim tokens=8 seed=4 hold_at=3 tag=${tag}`, background: true });
    await held(tag);
    const whole = eventsOf(a, created.id);
    const tail = eventsOf(a, created.id, 4);
    h.sim.records.release(tag);
    const [all, after] = await Promise.all([whole, tail]);
    expect(all.map((e) => e.sequence_number)).toEqual(all.map((_, i) => i));
    expect(all.at(-1)?.type).toBe("response.completed");
    // completed_at of a live stream is its reader's clock at the end (the two may straddle a second); the rest is the original's.
    expect(after.map(withoutEnd)).toEqual(all.slice(5).map(withoutEnd));
    // Once finished, the replay from the store says what the record says, completed_at included.
    const stored = await a.responses.retrieve(created.id);
    const replayed = await eventsOf(a, created.id, 4);
    expect(replayed.map(withoutEnd)).toEqual(after.map(withoutEnd));
    expect(replayed.at(-1)).toMatchObject({ type: "response.completed", response: { completed_at: stored.completed_at } });
  });

  it("cancel stops the upstream mid-stream: cancelled, and the stream ends", async () => {
    const tag = nextTag();
    const created = await a.responses.create({ model: "sim", input: `#sim tokens=8 seed=5 hold_at=2 tag=${tag}`, background: true });
    await held(tag);
    const cancelled = await a.responses.cancel(created.id);
    expect(cancelled).toMatchObject({ id: created.id, status: "cancelled", background: true });
    expect((await a.responses.retrieve(created.id)).status).toBe("cancelled");
    const upstream = await h.sim.records.waitFor((r) => r.tag === tag && r.outcome === "client_closed", 30_000);
    expect(upstream.outcome).toBe("client_closed");
    // Cancelling again answers the response as it ended.
    expect((await a.responses.cancel(created.id)).status).toBe("cancelled");
    await expect(eventsOf(a, created.id)).rejects.toThrow();
  });

  it("the client leaving a background stream does not stop the run", async () => {
    const tag = nextTag();
    const stream = await a.responses.create({ model: "sim", input: `#sim tokens=6 seed=6 hold_at=2 tag=${tag}`, background: true, stream: true });
    let id = "";
    for await (const event of stream) {
      if (event.type === "response.created") {
        id = event.response.id;
        break;
      }
    }
    expect(id).toMatch(/^resp_/);
    await held(tag);
    h.sim.records.release(tag);
    const events = await eventsOf(a, id);
    expect(events.at(-1)?.type).toBe("response.completed");
    expect((await a.responses.retrieve(id)).status).toBe("completed");
  });

  it("an upstream failure after admission: the POST said queued, the run reads failed with the reason, its stream raises", async () => {
    const created = await a.responses.create({ model: "sim", input: "#sim fail=status status=400", background: true });
    expect(created.status).toBe("queued");
    expect(await statusOf(eventsOf(a, created.id))).toBe(500);
    const failed = await a.responses.retrieve(created.id);
    expect(failed.status).toBe("failed");
    expect(failed.error?.message).toBeTruthy();
  });

  it("seen from another replica: in progress while its lease holds, and a cancel there stops the run here", async () => {
    const tag = nextTag();
    const created = await a.responses.create({ model: "sim", input: `#sim tokens=8 seed=12 hold_at=2 tag=${tag}`, background: true });
    await held(tag);
    // Its stream is open once a reader sees its first event: from then on the stream's control channel reaches it.
    const watching = await a.responses.retrieve(created.id, { stream: true });
    for await (const event of watching) if (event.type === "response.created") break;
    // A second replica's view of the same store and stream log (it runs nothing itself, so it needs no call layer).
    const sha256 = createHash("sha256").update(KEY_A).digest("hex");
    const principal = { id: keyId(sha256), sha256, name: "a" } as unknown as Principal;
    const other = createBackgroundRuns({ calls: {} as CallLayer, streams: h.sluice.resumable, state: h.sluice.responseState! });
    // Its lease holds: not taken for a run a stopped process left (queued or in progress, as far as the record was written).
    expect(["queued", "in_progress"]).toContain((await other.get(created.id, principal))?.status);
    expect((await other.cancel(created.id, principal))?.status).toBe("cancelled");
    // The stream's control channel reached the run: its upstream closes and it ends cancelled, with what it had.
    await h.sim.records.waitFor((r) => r.tag === tag && r.outcome === "client_closed", 30_000);
    await expect(eventsOf(a, created.id)).rejects.toThrow();
    const ended = await a.responses.retrieve(created.id);
    expect(ended.status).toBe("cancelled");
  });

  it("a cancel from another replica before the run streams: the run stops at its first event and stays cancelled", async () => {
    const tag = nextTag();
    const created = await a.responses.create({ model: "sim", input: `#sim tokens=8 seed=13 hold_at=0 tag=${tag}`, background: true });
    await held(tag);
    const sha256 = createHash("sha256").update(KEY_A).digest("hex");
    const principal = { id: keyId(sha256), sha256, name: "a" } as unknown as Principal;
    const other = createBackgroundRuns({ calls: {} as CallLayer, streams: h.sluice.resumable, state: h.sluice.responseState! });
    expect((await other.cancel(created.id, principal))?.status).toBe("cancelled");
    h.sim.records.release(tag);
    // It stops at its first event, or, had the whole answer come in one read, ends: cancelled either way.
    await h.sim.records.waitFor((r) => r.tag === tag && r.outcome !== "streaming", 30_000);
    await eventsOf(a, created.id).catch(() => undefined);
    expect((await a.responses.retrieve(created.id)).status).toBe("cancelled");
  });

  it("another key's response is 404 on retrieve, stream and cancel", async () => {
    const created = await a.responses.create({ model: "sim", input: "#sim tokens=3 seed=7", background: true });
    expect(await statusOf(b.responses.retrieve(created.id))).toBe(404);
    expect(await statusOf(eventsOf(b, created.id))).toBe(404);
    expect(await statusOf(b.responses.cancel(created.id))).toBe(404);
    expect(await statusOf(a.responses.retrieve(newResponseId()))).toBe(404);
    await eventsOf(a, created.id);
  });

  it("cancelling a response that is not a background one is 400", async () => {
    const id = newResponseId();
    await plant({ id, status: "completed", response: { id, object: "response", status: "completed", background: false, store: true, output: [] } }, KEY_A);
    expect(await statusOf(a.responses.cancel(id))).toBe(400);
  });

  it("a run whose process stopped (its lease passed) reads as failed with server_restarted, never in progress forever", async () => {
    const id = newResponseId();
    await plant({ id, status: "in_progress", leaseUntil: Date.now() - 1, response: { id, object: "response", status: "in_progress", background: true, store: true, output: [] } }, KEY_A);
    const read = await a.responses.retrieve(id);
    expect(read.status).toBe("failed");
    expect(read.error?.code).toBe("server_restarted");
    expect((await a.responses.retrieve(id)).status).toBe("failed");
  });

  it("store: false with background is refused naming background", async () => {
    const refused = await a.responses.create({ model: "sim", input: "hi", background: true, store: false }).catch((error: unknown) => error);
    expect(refused).toBeInstanceOf(APIError);
    expect((refused as APIError).status).toBe(400);
    expect((refused as APIError).param).toBe("background");
  });

  it("a key over its budget is refused at start with 402, and nothing is queued", async () => {
    const broke = new OpenAI({ baseURL: `${h.url}/v1`, apiKey: KEY_BROKE, maxRetries: 0 });
    let status: number | undefined = 200;
    for (let i = 0; i < 40 && status === 200; i++) status = await statusOf(broke.responses.create({ model: "sim", input: "#sim tokens=40 seed=1" }));
    expect(status).toBe(402);
    expect(await statusOf(broke.responses.create({ model: "sim", input: "#sim tokens=4", background: true }))).toBe(402);
  });
});

describe("a gateway that shuts down with runs under way", () => {
  it("ends them failed, saying so, rather than leaving them in progress", async () => {
    const g = await startHarness({ models: { sim: "sim-1" } });
    const client = new OpenAI({ baseURL: `${g.url}/v1`, apiKey: "unused", maxRetries: 0 });
    const tag = nextTag();
    const created = await client.responses.create({ model: "sim", input: `#sim tokens=6 seed=14 hold_at=2 tag=${tag}`, background: true });
    await g.sim.records.waitFor((r) => r.tag === tag && r.heldAt !== undefined, 30_000);
    const store = g.sluice.responseState!.store;
    await g.close();
    const ended = await store.get(created.id, "");
    expect(ended?.status).toBe("failed");
    expect(ended?.leaseUntil).toBeUndefined();
    expect(JSON.stringify(ended?.response.error)).toMatch(/shut/);
  });
});
