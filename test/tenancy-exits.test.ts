import { connect as h2connect } from "node:http2";
import { afterAll, describe, expect, it } from "vitest";
import { simulatedText } from "../src/simulator/text.js";
import { chatClient, collect, transports, userRequest } from "./helpers/clients.js";
import { type Harness, startHarness } from "./helpers/harness.js";
import { dropPrefix, SHARED_REDIS_URL, testPrefix, usageRecords } from "./helpers/redis.js";
import { tenancyEvents } from "./helpers/tenancy-events.js";

const KEY = "sk-test-exits-3c5e7a9b1d2f4068";
const prefixes: string[] = [];
afterAll(async () => {
  for (const p of prefixes) await dropPrefix(p);
});

async function gateway(): Promise<{ h: Harness; prefix: string; events: ReturnType<typeof tenancyEvents> }> {
  const prefix = testPrefix("exits");
  prefixes.push(prefix);
  const events = tenancyEvents();
  const h = await startHarness({
    models: { sim: "sim-1" },
    env: { EXITS_KEY: KEY },
    auth: { keys: [{ name: "k", keyEnv: "EXITS_KEY", limits: { concurrentStreams: 5 } }] },
    store: { redis: { url: SHARED_REDIS_URL, prefix, failMode: "closed", timeoutMs: 5_000 } },
    observer: events.observer,
  });
  return { h, prefix, events };
}

describe("usage is settled on every way a stream can end", () => {
  it("a client that vanishes while the gateway is blocked writing to it", async () => {
    const { h, prefix, events } = await gateway();
    try {
      const tag = "exits-blocked";
      const session = h2connect(h.url);
      session.on("error", () => undefined);
      const stream = session.request({
        ":method": "POST",
        ":path": "/v1/chat/completions",
        "content-type": "application/json",
        authorization: `Bearer ${KEY}`,
        "x-request-id": tag,
      });
      stream.on("error", () => undefined);
      let chunks = 0;
      const first = new Promise<void>((resolve) => stream.on("data", () => ++chunks === 1 && resolve()));
      stream.end(JSON.stringify({ model: "sim", stream: true, messages: [{ role: "user", content: `#sim tokens=20000 token_chars=1000 tag=${tag}` }] }));
      await first;
      stream.pause();
      // Backpressure reached the upstream: the gateway is blocked writing to this client.
      await h.sim.records.waitFor((r) => r.tag === tag && r.waitingForDrain === true, 30_000);
      session.destroy();
      const record = await events.recorded(tag);
      expect(record).toMatchObject({ outcome: "canceled", code: "canceled", estimated: true });
      expect(record.outputTokens).toBeGreaterThan(0);
      expect((await usageRecords(prefix)).map((r) => r.requestId)).toEqual([tag]);
      // Its concurrency slot is free again: five more streams fit.
      const grpc = chatClient(transports(h.url)["grpc (connect-node, h2)"]!);
      await Promise.all(Array.from({ length: 5 }, () => collect(grpc.streamChat(userRequest("sim", "#sim tokens=2"), { headers: { authorization: `Bearer ${KEY}` } }))));
    } finally {
      await h.close();
    }
  });

  it("shutdown: a stream ended at the end of the drain is recorded before the gateway lets go of Redis", async () => {
    const { h, prefix } = await gateway();
    const tag = "exits-shutdown";
    const grpc = chatClient(transports(h.url)["grpc (connect-node, h2)"]!);
    let received = "";
    let twoArrived: () => void = () => undefined;
    const two = new Promise<void>((resolve) => (twoArrived = resolve));
    // The upstream holds after two tokens; once both reached the client (maybe
    // in one message: the edge joins text that arrived together), the gateway has seen them too.
    const held = (async () => {
      try {
        for await (const m of grpc.streamChat(userRequest("sim", `#sim tokens=10 hold_at=2 tag=${tag}`), { headers: { authorization: `Bearer ${KEY}`, "x-request-id": tag } })) {
          if (m.delta.case === "text" && (received += m.delta.value.text) === simulatedText(1, 2)) twoArrived();
        }
      } catch {
        // the shutdown's UNAVAILABLE
      }
    })();
    await two;
    await h.sluice.shutdown(0);
    await held;
    await h.sim.close();
    const records = await usageRecords(prefix);
    expect(records).toHaveLength(1);
    expect(records[0]).toMatchObject({ requestId: tag, outcome: "failed", code: "shutting_down", estimated: true });
  });
});
