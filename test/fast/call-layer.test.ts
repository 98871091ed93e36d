import { describe, expect, it } from "vitest";
import { type CallItem, createCallLayer, deltaOf } from "../../src/call/call-layer.js";
import type { ChatRequest } from "../../src/core/chat-request.js";
import { GatewayError } from "../../src/core/errors.js";
import { createMemoryStreamLog } from "../../src/resume/memory-stream-log.js";
import { createResumableStreams } from "../../src/resume/resumable-streams.js";
import { ADMIN_CREDENTIAL, fakePipeline, KEY, REQUEST, fakeTenancy as tenancy } from "./helpers/fake-pipeline.js";

/**
 * The call layer in memory: a scripted pipeline (its deltas, its quota
 * report) and a scripted tenancy, so what every edge relies on (identify,
 * quota as data, plain or resumable, resume, cancel, model lists) is
 * checked without a socket. The wire tests check the same through each
 * edge's clients.
 */

const call = (signal = new AbortController().signal) => ({ requestId: "req-1", edge: "test", signal, fields: {} as Record<string, unknown> });

async function drain(items: AsyncIterable<CallItem>): Promise<CallItem[]> {
  const out: CallItem[] = [];
  for await (const item of items) out.push(item);
  return out;
}

function resumable() {
  return createResumableStreams({
    log: createMemoryStreamLog({ retentionMs: 60_000 }),
    settings: { detachGraceMs: 60_000, retentionMs: 60_000, maxBacklogMessages: 100, maxBacklogBytes: 1_000_000, maxReaders: 10 },
    storeTimeoutMs: 1_000,
  });
}

describe("the call layer", () => {
  it("charges a stream under the allowed tags of its labels and sluice-tags header (the header wins), and names the rest in sluice-tags-dropped", async () => {
    const pipeline = fakePipeline();
    const layer = createCallLayer({ pipeline, tenancy });
    const request = { ...REQUEST, metadata: { labels: { project: "from-body", feature: "chat" } } };
    const tagged = layer.stream(request, KEY, { ...call(), tags: { project: "search", env: "prod", "cost-center": "42" } }, { heartbeatMs: 0 });
    for await (const _ of tagged.items) {
      // read to the end
    }
    expect(pipeline.contexts[0]!.tags).toEqual({ project: "search", env: "prod" });
    expect(tagged.quota()["sluice-tags-dropped"]).toBe("feature,cost-center");

    const untagged = layer.stream(REQUEST, KEY, call(), { heartbeatMs: 0 });
    for await (const _ of untagged.items) {
      // read to the end
    }
    expect(pipeline.contexts[1]!.tags).toBeUndefined();
    expect(untagged.quota()).not.toHaveProperty("sluice-tags-dropped");
  });

  it("identifies the caller and names its key on the access line; refuses a bad credential before anything runs", async () => {
    const pipeline = fakePipeline();
    const layer = createCallLayer({ pipeline, tenancy });
    const fields: Record<string, unknown> = {};
    expect(await layer.identify("Bearer good", "test", fields)).toBe(KEY);
    expect(fields.key).toBe("team-a");
    await expect(layer.identify("Bearer bad", "test", {})).rejects.toMatchObject({ code: "unauthenticated" });
    expect(pipeline.contexts).toHaveLength(0);
  });

  it("streams plain deltas with their buffered count, and returns the quota as data once the key was admitted", async () => {
    const pipeline = fakePipeline();
    const layer = createCallLayer({ pipeline, tenancy });
    const stream = layer.stream(REQUEST, KEY, call(), { heartbeatMs: 0 });
    expect(stream.resumable).toBe(false);
    expect(stream.quota()).toEqual({});
    const first = await stream.items.next();
    expect(first.value).toMatchObject({ type: "start", droppedParams: ["reasoning.effort"] });
    expect(stream.quota()).toMatchObject({ "x-ratelimit-limit-requests": "10", "x-ratelimit-remaining-requests": "9" });
    expect(stream.buffered()).toBeGreaterThan(0);
    const rest = await drain(stream.items);
    expect(rest.map((i) => deltaOf(i).type)).toEqual(["text", "text", "usage", "finish"]);
    expect(pipeline.contexts[0]!.principal).toBe(KEY);
  });

  it("keeps the quota of a refused call for the edge's error response", async () => {
    const layer = createCallLayer({ pipeline: fakePipeline({ refuse: new GatewayError("rate_limited", "too many requests") }), tenancy });
    const stream = layer.stream(REQUEST, KEY, call(), { heartbeatMs: 0 });
    await expect(drain(stream.items)).rejects.toMatchObject({ code: "rate_limited" });
    expect(stream.quota()["x-ratelimit-remaining-requests"]).toBe("9");
  });

  it("hands the deadline, trace fields and a per-target rewrite down to the pipeline", async () => {
    const pipeline = fakePipeline();
    const layer = createCallLayer({ pipeline, tenancy });
    const prepare = async (request: ChatRequest) => request;
    await drain(layer.stream(REQUEST, undefined, { ...call(), deadlineAt: 1234 }, { heartbeatMs: 0, prepare }).items);
    expect(pipeline.contexts[0]).toMatchObject({ requestId: "req-1", edge: "test", deadlineAt: 1234, prepare });
    expect(pipeline.contexts[0]!.principal).toBeUndefined();
  });

  it("serves a resumable request plainly where resumable streams are not configured, and answers resume and cancel with not_found", async () => {
    const layer = createCallLayer({ pipeline: fakePipeline(), tenancy });
    const stream = layer.stream(REQUEST, KEY, call(), { heartbeatMs: 0, resumable: true });
    expect(stream.resumable).toBe(false);
    expect(await drain(stream.items)).toHaveLength(5);
    await expect(layer.resume("resp_x", KEY, new AbortController().signal, { after: -1, heartbeatMs: 0 })).rejects.toMatchObject({ code: "not_found" });
    await expect(layer.cancel("resp_x", KEY)).rejects.toMatchObject({ code: "not_found" });
  });

  it("numbers a resumable stream, observes its deltas inside, and detaches when the client leaves: a resume gets the rest", async () => {
    const pipeline = fakePipeline({ hold: true });
    const streams = resumable();
    const layer = createCallLayer({ pipeline, tenancy, resumable: streams });
    const client = new AbortController();
    const seen: string[] = [];
    const stream = layer.stream(REQUEST, KEY, call(client.signal), { heartbeatMs: 0, resumable: true, observe: (d) => seen.push(d.type) });
    expect(stream.resumable).toBe(true);
    expect(stream.observe).toBeUndefined();
    const got: CallItem[] = [];
    for (let i = 0; i < 4; i++) got.push((await stream.items.next()).value as CallItem);
    expect(got.map((i) => ("sequence" in i ? i.sequence : -1))).toEqual([0, 1, 2, 3]);
    const responseId = (deltaOf(got[0]!) as { responseId: string }).responseId;
    // The client leaves: the upstream goes on (the stream detaches), it is not aborted.
    client.abort(new GatewayError("canceled", "client left"));
    void stream.items.return(undefined);
    const resumed = await layer.resume(responseId, KEY, new AbortController().signal, { after: 2, heartbeatMs: 0 });
    const next = await resumed.items.next();
    expect(next.value).toMatchObject({ sequence: 3 });
    // CancelStream stops the held upstream; the resumed reader sees the end.
    await layer.cancel(responseId, KEY);
    await pipeline.closed(0);
    await expect(drain(resumed.items)).rejects.toMatchObject({ code: "canceled" });
    expect(seen.slice(0, 4)).toEqual(["start", "text", "text", "usage"]);
    await streams.close();
  });

  it("lists the aliases a key may see, every alias for the admin credential, and checks an alias as a stream would", async () => {
    const layer = createCallLayer({ pipeline: fakePipeline(), tenancy });
    const fields: Record<string, unknown> = {};
    expect((await layer.models("Bearer good", "test", fields)).map((m) => m.id)).toEqual(["sim"]);
    expect(fields.key).toBe("team-a");
    expect((await layer.models(ADMIN_CREDENTIAL, "test")).map((m) => m.id)).toEqual(["sim", "other"]);
    await expect(layer.models("Bearer bad", "test")).rejects.toMatchObject({ code: "unauthenticated" });
    expect(() => layer.checkAlias(KEY, "nope")).toThrow(expect.objectContaining({ code: "unknown_model" }));
    expect(() => layer.checkAlias(KEY, "other")).toThrow(expect.objectContaining({ code: "permission_denied" }));
    expect(() => layer.checkAlias(KEY, "sim")).not.toThrow();
    expect(() => layer.checkAlias(undefined, "other")).not.toThrow();
  });
});
