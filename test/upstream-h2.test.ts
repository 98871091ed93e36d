import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DEFAULT_TIMEOUTS } from "../src/config/schema.js";
import { simulatedText } from "../src/simulator/text.js";
import { fromTransportError } from "../src/upstream/transport-errors.js";
import { NO_H2_CODE } from "../src/upstream/upstream-agent.js";
import { chatClient, collect, textOf, transports, userRequest } from "./helpers/clients.js";
import type { StreamChatResponse } from "../gen/sluice/v1/chat_service_pb.js";
import { FAR_TIMEOUTS, type Harness, startHarness } from "./helpers/harness.js";

/**
 * A provider with `http.version: "2"`: the gateway multiplexes its upstream
 * streams on one HTTP/2 connection to the simulator's h2c listener, and each
 * stream keeps its own cancellation and backpressure.
 */
let h: Harness;
beforeAll(async () => {
  h = await startHarness({
    simulator: { h2c: true },
    routing: (sim) => ({
      providers: {
        h2: { kind: "openai", baseUrl: sim.h2cOpenAiBaseUrl!, http: { version: "2" }, timeouts: FAR_TIMEOUTS, breaker: { failures: 10_000 } },
        four: { kind: "openai", baseUrl: sim.h2cOpenAiBaseUrl!, http: { version: "2", maxStreamsPerConnection: 4 }, timeouts: FAR_TIMEOUTS, breaker: { failures: 10_000 } },
      },
      models: { sim: { provider: "h2", model: "sim-1" }, four: { provider: "four", model: "sim-1" } },
    }),
  });
});
afterAll(() => h.close());

const client = () => chatClient(transports(h.url)["grpc (connect-node, h2)"]!);

/** Starts a stream whose upstream writes `after` tokens and then stalls until closed; resolves once the simulator stalls. */
async function stalledStream(tag: string, after: number, alias = "sim") {
  const abort = new AbortController();
  const done = collect(client().streamChat(userRequest(alias, `#sim tokens=2000 fail=stall fail_at=${after} tag=${tag}`), { signal: abort.signal })).catch(
    () => undefined,
  );
  await h.sim.records.waitFor((r) => r.tag === tag && r.outcome === "stalled", 10_000);
  return { abort, done };
}

describe("upstream HTTP/2", () => {
  it("streams in flight share one connection, and a cancel resets only its own stream", async () => {
    // One stream first, so the connection is up before the others arrive.
    const streams = [await stalledStream("h2-share-0", 2)];
    streams.push(...(await Promise.all(Array.from({ length: 9 }, (_, i) => stalledStream(`h2-share-${i + 1}`, 2)))));
    expect(h.sim.stats()).toMatchObject({ openConnections: 1, activeRequests: 10 });

    streams[3]!.abort.abort();
    await streams[3]!.done;
    const cancelled = await h.sim.records.waitFor((r) => r.tag === "h2-share-3" && r.endedAt !== undefined, 10_000);
    expect(cancelled.outcome).toBe("client_closed");
    // The other nine still stream on the same, still open, connection.
    const others = h.sim.records.all().filter((r) => r.tag?.startsWith("h2-share-") && r.tag !== "h2-share-3");
    expect(others.map((r) => r.outcome)).toEqual(Array(9).fill("stalled"));
    expect(h.sim.stats()).toMatchObject({ openConnections: 1, activeRequests: 9 });

    for (const s of streams) s.abort.abort();
    await Promise.all(streams.map((s) => s.done));
    await h.sim.records.waitFor(() => h.sim.stats().activeRequests === 0, 10_000);
    expect(h.sim.stats().openConnections).toBe(1);
  });

  it("a burst at a provider with no connection yet opens only as many as its streams need", async () => {
    const before = h.sim.stats().openConnections;
    // All ten arrive while the first connection is still being set up.
    const streams = await Promise.all(Array.from({ length: 10 }, (_, i) => stalledStream(`h2-burst-${i}`, 1, "four")));
    expect(h.sim.stats().openConnections - before).toBe(3); // 4 + 4 + 2
    for (const s of streams) s.abort.abort();
    await Promise.all(streams.map((s) => s.done));
  });

  it("an upstream that resets its stream mid-answer fails that stream, not the connection's others", async () => {
    const other = await stalledStream("h2-reset-bystander", 1);
    const connections = h.sim.stats().openConnections;
    const received: StreamChatResponse[] = [];
    let failed = false;
    try {
      for await (const m of client().streamChat(userRequest("sim", "#sim tokens=20 fail=reset fail_at=3 tag=h2-reset"))) received.push(m);
    } catch {
      failed = true;
    }
    // Never a clean end: the client knows its answer is cut short.
    expect(failed).toBe(true);
    // As with a TCP reset, what arrived just before the reset may be lost with it.
    expect(simulatedText(1, 3).startsWith(textOf(received))).toBe(true);
    expect(received.some((m) => m.delta.case === "finish")).toBe(false);
    expect(h.sim.records.all().find((r) => r.tag === "h2-reset-bystander")).toMatchObject({ outcome: "stalled" });
    expect(h.sim.stats().openConnections).toBe(connections);
    other.abort.abort();
    await other.done;
  });

  it("a client that stops reading holds back its own upstream stream, not the connection's others", async () => {
    const tokens = 2_000;
    const tokenChars = 10_000;
    const abort = new AbortController();
    const slow = client().streamChat(userRequest("sim", `#sim tokens=${tokens} token_chars=${tokenChars} tag=h2-slow`), { signal: abort.signal });
    const reader = slow[Symbol.asyncIterator]();
    await reader.next(); // then reads nothing more
    const held = await h.sim.records.waitFor((r) => r.tag === "h2-slow" && r.waitingForDrain === true, 20_000);
    expect(held.bytesWritten).toBeLessThan((tokens * tokenChars) / 2);
    const connections = h.sim.stats().openConnections;

    // Another stream on the same connection runs to its end meanwhile.
    const fast = await collect(client().streamChat(userRequest("sim", "#sim tokens=200 tag=h2-fast")));
    expect(textOf(fast)).toBe(simulatedText(1, 200));
    expect(h.sim.records.all().find((r) => r.tag === "h2-slow")).toMatchObject({ outcome: "streaming", waitingForDrain: true });
    expect(h.sim.stats().openConnections).toBe(connections);

    abort.abort();
    await reader.return?.();
    const record = await h.sim.records.waitFor((r) => r.tag === "h2-slow" && r.endedAt !== undefined, 10_000);
    expect(record.outcome).toBe("client_closed");
  });
});

describe("an https provider that does not negotiate h2", () => {
  it("is unreachable (retried and failed over like a refused connect), not an internal error", () => {
    const refused = Object.assign(new Error("api.example did not negotiate HTTP/2"), { code: NO_H2_CODE });
    const error = fromTransportError(refused, { provider: "p", timeouts: DEFAULT_TIMEOUTS, phase: "connect" });
    expect(error).toMatchObject({ code: "upstream_unavailable", message: "cannot reach provider p" });
  });
});
