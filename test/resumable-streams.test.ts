import { Code } from "@connectrpc/connect";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { StreamChatResponse } from "../gen/sluice/v1/chat_service_pb.js";
import { simulatedText } from "../src/simulator/text.js";
import { type ChatClient, chatClient, collect, rpcFailure, streamAndDrop, textOf, transports, userRequest } from "./helpers/clients.js";
import { FAR_TIMEOUTS, type Harness, startHarness } from "./helpers/harness.js";

const resumable = { streamOptions: { resumable: true } };

/** Streams `prompt` resumably and drops the connection on the `after`-th text delta; the messages received. */
const startAndDrop = (client: ChatClient, prompt: string, after: number) => streamAndDrop(client, userRequest("sim", prompt, resumable), after);

const responseIdOf = (messages: readonly StreamChatResponse[]) => (messages[0]?.delta.case === "start" ? messages[0].delta.value.responseId : "");

/** Sequence numbers run 0, 1, 2, … without a gap or a repeat. */
function expectGapFree(messages: readonly StreamChatResponse[]) {
  expect(messages.map((m) => Number(m.sequence))).toEqual(messages.map((_, i) => i));
}

describe("resumable streams, one gateway (in-process store)", () => {
  let h: Harness;
  let client: ChatClient;
  beforeAll(async () => {
    h = await startHarness({ models: { sim: "sim-1" }, provider: { timeouts: FAR_TIMEOUTS } });
    client = chatClient(transports(h.url)["grpc (connect-node, h2)"]!);
  });
  afterAll(() => h.close());

  it("continue after a dropped connection with exactly the messages the client missed", async () => {
    const direct = textOf(await collect(client.streamChat(userRequest("sim", "#sim tokens=30"))));
    const first = await startAndDrop(client, "#sim tokens=30 hold_at=12 tag=resume-grpc", 8);
    const id = responseIdOf(first);
    expect(id).toMatch(/^resp_/);
    expect(textOf(first)).toBe(simulatedText(1, 30).slice(0, textOf(first).length));
    expect(first.filter((m) => m.delta.case === "text")).toHaveLength(8);
    const last = first.at(-1)!.sequence;
    // The upstream holds after 12 tokens, so it is still running when the reader arrives: stored messages first, then live ones.
    await h.sim.records.waitFor((r) => r.tag === "resume-grpc" && r.heldAt !== undefined, 30_000);
    const resumed = collect(client.resumeStream({ responseId: id, afterSequence: last }));
    h.sim.records.release("resume-grpc");
    const rest = await resumed;
    const all = [...first, ...rest];
    expectGapFree(all);
    expect(textOf(all)).toBe(direct);
    expect(direct).toBe(simulatedText(1, 30));
    expect(all.at(-1)!.delta.case).toBe("finish");
    const record = await h.sim.records.waitFor((r) => r.tag === "resume-grpc" && r.endedAt !== undefined, 30_000);
    expect(record.outcome).toBe("completed");
  });

  it("replay the whole stream, start included, when no sequence is given; two readers both get all of it", async () => {
    const first = await startAndDrop(client, "#sim tokens=12 tag=resume-twice", 2);
    const id = responseIdOf(first);
    const [a, b] = await Promise.all([collect(client.resumeStream({ responseId: id })), collect(client.resumeStream({ responseId: id }))]);
    expectGapFree(a);
    expect(b).toEqual(a);
    expect(a[0]!.delta.case).toBe("start");
    expect(textOf(a)).toBe(simulatedText(1, 12));
  });

  it("CancelStream stops the upstream for good; readers end with CANCELLED", async () => {
    const first = await startAndDrop(client, "#sim tokens=2000 fail=stall fail_at=4 tag=resume-cancel", 4);
    const id = responseIdOf(first);
    await client.cancelStream({ responseId: id });
    const record = await h.sim.records.waitFor((r) => r.tag === "resume-cancel" && r.endedAt !== undefined, 30_000);
    expect(record.outcome).toBe("client_closed");
    const error = await rpcFailure(collect(client.resumeStream({ responseId: id, afterSequence: 1n })));
    expect(error.code).toBe(Code.Canceled);
    expect(error.rawMessage).toContain("CancelStream");
  });

  it("answer NOT_FOUND naming the id for an unknown stream, a capped echo for a malformed one", async () => {
    const unknown = `resp_${"0".repeat(32)}`;
    const error = await rpcFailure(collect(client.resumeStream({ responseId: unknown })));
    expect(error.code).toBe(Code.NotFound);
    expect(error.rawMessage).toContain(unknown);
    const hostile = await rpcFailure(collect(client.resumeStream({ responseId: "x".repeat(100_000) })));
    expect(hostile.code).toBe(Code.NotFound);
    expect(hostile.rawMessage.length).toBeLessThan(300);
    expect((await rpcFailure(client.cancelStream({ responseId: unknown }))).code).toBe(Code.NotFound);
  });

  it("number a heartbeat with the sequence of the message before it; the content stays gap-free", async () => {
    const messages: StreamChatResponse[] = [];
    const request = userRequest("sim", "#sim tokens=5 hold_at=2 tag=resume-heartbeat", { streamOptions: { resumable: true, heartbeatIntervalMs: 20 } });
    for await (const m of client.streamChat(request)) {
      messages.push(m);
      if (m.delta.case === "heartbeat" && textOf(messages) === simulatedText(1, 2)) h.sim.records.release("resume-heartbeat");
    }
    let previous = 0n;
    for (const m of messages) {
      if (m.delta.case === "heartbeat") expect(m.sequence).toBe(previous);
      else previous = m.sequence;
    }
    expect(messages.some((m) => m.delta.case === "heartbeat")).toBe(true);
    expectGapFree(messages.filter((m) => m.delta.case !== "heartbeat"));
    expect(textOf(messages)).toBe(simulatedText(1, 5));
  });

  it("leave a stream without stream_options.resumable as it was: no resume", async () => {
    const messages = await collect(client.streamChat(userRequest("sim", "#sim tokens=3")));
    expect((await rpcFailure(collect(client.resumeStream({ responseId: responseIdOf(messages) })))).code).toBe(Code.NotFound);
  });
});

describe("resumable streams: detach grace and backlog bound", () => {
  let h: Harness;
  let client: ChatClient;
  beforeAll(async () => {
    h = await startHarness({ models: { sim: "sim-1" }, provider: { timeouts: FAR_TIMEOUTS }, resume: { detachGraceMs: 50, maxBacklogMessages: 16 } });
    client = chatClient(transports(h.url)["grpc (connect-node, h2)"]!);
  });
  afterAll(() => h.close());

  it("cancel the upstream when nobody resumes within the grace, and tell later readers why", async () => {
    const first = await startAndDrop(client, "#sim tokens=2000 fail=stall fail_at=3 tag=grace-expiry", 3);
    const record = await h.sim.records.waitFor((r) => r.tag === "grace-expiry" && r.endedAt !== undefined, 30_000);
    expect(record.outcome).toBe("client_closed");
    const error = await rpcFailure(collect(client.resumeStream({ responseId: responseIdOf(first), afterSequence: 3n })));
    expect(error.code).toBe(Code.Canceled);
    expect(error.rawMessage).toContain("detach grace");
    // Operators see each turn, by response id.
    const id = responseIdOf(first);
    await h.waitForLog((l) => l.event === "resume.detached" && l.responseId === id);
    await h.waitForLog((l) => l.event === "resume.grace_expired" && l.responseId === id);
  });

  it("stop being resumable past the backlog bound: the client is told in a trailer, a reader with FAILED_PRECONDITION", async () => {
    let trailer: string | null = null;
    const messages: StreamChatResponse[] = [];
    for await (const m of client.streamChat(userRequest("sim", "#sim tokens=40"), { onTrailer: (t: Headers) => (trailer = t.get("sluice-resumable")) })) messages.push(m);
    expect(messages.at(-1)!.delta.case).toBe("finish");
    expect(trailer).toBeNull();
    const long: StreamChatResponse[] = [];
    for await (const m of client.streamChat(userRequest("sim", "#sim tokens=40", resumable), { onTrailer: (t: Headers) => (trailer = t.get("sluice-resumable")) })) long.push(m);
    expect(textOf(long)).toBe(simulatedText(1, 40));
    expect(trailer).toBe("false");
    const error = await rpcFailure(collect(client.resumeStream({ responseId: responseIdOf(long), afterSequence: 1n })));
    expect(error.code).toBe(Code.FailedPrecondition);
  });
});
