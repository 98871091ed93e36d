import { once } from "node:events";
import { connect as h2connect } from "node:http2";
import { setTimeout as delay } from "node:timers/promises";
import { create } from "@bufbuild/protobuf";
import { Code } from "@connectrpc/connect";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { StreamChatResponse } from "../gen/sluice/v1/chat_service_pb.js";
import { StreamOptionsSchema } from "../gen/sluice/v1/chat_service_pb.js";
import { simulatedText } from "../src/simulator/text.js";
import { type ChatClient, chatClient, collect, textOf, transports, userRequest } from "./helpers/clients.js";
import { FAR_TIMEOUTS, type Harness, PROVIDER_KINDS, startHarness } from "./helpers/harness.js";
import { rpcUntilError } from "./helpers/until-error.js";

function outcome(client: ChatClient, model: string, text: string, options: Parameters<typeof userRequest>[2] = {}) {
  return rpcUntilError(client.streamChat(userRequest(model, text, options)));
}

/**
 * The idle timeout of the alias whose cases must NOT time out: 20 times the
 * ping interval (50 ms) those cases use, so scheduling jitter on a loaded
 * machine cannot trip it, and half the silence they hold, so it would fire if
 * the behaviour under test broke.
 */
const IDLE_MS = 1000;

/** An alias with one short timeout; every other one is far away, so only that phase can end its streams. */
const only = (phase: keyof typeof FAR_TIMEOUTS, ms: number) => ({ model: "sim-1", timeouts: { ...FAR_TIMEOUTS, [phase]: ms } });

describe.each(PROVIDER_KINDS)("per-phase timeouts, %s upstream", (kind) => {
  let h: Harness;
  let client: ChatClient;
  beforeAll(async () => {
    h = await startHarness({
      kind,
      models: {
        headers: only("headersMs", 300),
        first_token: only("firstTokenMs", 300),
        idle: only("idleMs", 200),
        total: only("totalMs", 800),
        paced: only("idleMs", IDLE_MS),
      },
    });
    client = chatClient(transports(h.url)["grpc (connect-node, h2)"]!);
  });
  afterAll(() => h.close());

  // A timeout that must fire is safe on a slow machine (timers never fire
  // early); each upstream here would stay silent or unfinished for far longer
  // than any run takes, so nothing races the timer.
  const cases: Array<[string, string, string, string]> = [
    ["headers", "headers", "#sim headers_ms=600000 tag=t-headers", "headers timeout: provider simulator sent no response headers within 300 ms"],
    ["first token", "first_token", "#sim ttft_ms=600000 ping_ms=50 tag=t-first", "first-token timeout: provider simulator sent no content within 300 ms of its response headers"],
    ["idle", "idle", "#sim fail=stall fail_at=3 tag=t-idle", "idle timeout: provider simulator sent nothing for 200 ms"],
    ["total", "total", "#sim tokens=1000 delay_ms=10 tag=t-total", "total timeout: provider simulator did not finish within 800 ms"],
  ];
  for (const [phase, model, text, message] of cases) {
    it(`${phase}: UNAVAILABLE naming the phase, upstream aborted`, async () => {
      const tag = /tag=(\S+)/.exec(text)![1]!;
      const { received, error } = await outcome(client, model, text);
      expect(error?.code).toBe(Code.Unavailable);
      expect(error?.rawMessage).toBe(message);
      expect(received.some((m) => m.delta.case === "finish")).toBe(false);
      const record = await h.sim.records.waitFor((r) => r.tag === tag && r.endedAt !== undefined, 30_000);
      expect(record.outcome).toBe("client_closed");
    });
  }

  // The three cases below each take seconds of real silence or pause, and
  // share nothing but the harness: they wait side by side.
  it.concurrent("pings keep a silent upstream within the idle timeout (but are not content)", async ({ expect }) => {
    // Two seconds of silence between the tokens, a ping every 50 ms of it.
    const { received, error } = await outcome(client, "paced", `#sim ping_ms=50 delay_ms=${2 * IDLE_MS} tokens=2`);
    expect(error).toBeUndefined();
    expect(textOf(received)).toBe(simulatedText(1, 2));
  });

  it.concurrent("without pings, silence on the same alias is an idle timeout", async ({ expect }) => {
    // The same silence, only never ending: nothing races the timer.
    const { received, error } = await outcome(client, "paced", "#sim delay_ms=600000 tokens=2");
    expect(error?.rawMessage).toBe(`idle timeout: provider simulator sent nothing for ${IDLE_MS} ms`);
    expect(textOf(received)).toBe(simulatedText(1, 1));
  });

  it.concurrent("a slow client is not upstream silence: pausing longer than the idle timeout is fine", async ({ expect }) => {
    // 100 kB tokens: once the client stops reading, HTTP/2 flow control holds
    // the gateway at a write (whatever the machine's speed) while the pause lasts.
    const messages = client.streamChat(userRequest("paced", "#sim tokens=6 token_chars=100000"));
    const received: StreamChatResponse[] = [];
    for await (const m of messages) {
      received.push(m);
      if (received.length === 2) await delay(2 * IDLE_MS); // the behaviour under test: a consumer that stalls
    }
    expect(textOf(received).replaceAll("·", "")).toBe(simulatedText(1, 6));
    expect(received.at(-1)!.delta.case).toBe("finish");
  });

  it("pings before the first event are tolerated", async () => {
    const { received, error } = await outcome(client, "paced", "#sim ping_every=1 tokens=5 eol=crlf");
    expect(error).toBeUndefined();
    expect(textOf(received)).toBe(simulatedText(1, 5));
  });

  it("before the first delta, failures are plain RPC errors with nothing streamed", async () => {
    for (const fail of ["drop", "malformed", "error_event"]) {
      const { received, error } = await outcome(client, "paced", `#sim fail=${fail} fail_at=0`);
      expect(received, fail).toEqual([]);
      expect(error, fail).toBeDefined();
    }
  });
});

describe("heartbeats", () => {
  let h: Harness;
  beforeAll(async () => {
    h = await startHarness();
  });
  afterAll(() => h.close());

  it("sends Heartbeat messages during silence when asked, sequence stays gap-free", async () => {
    const client = chatClient(transports(h.url)["connect (connect-node, HTTP/1.1)"]!);
    const request = userRequest("sim", "#sim tokens=3 hold_at=0 tag=heartbeats", {
      streamOptions: create(StreamOptionsSchema, { heartbeatIntervalMs: 50 }),
    });
    const messages: StreamChatResponse[] = [];
    for await (const m of client.streamChat(request)) {
      messages.push(m);
      // The upstream stays silent until the third heartbeat is here, however long that takes.
      if (messages.filter((x) => x.delta.case === "heartbeat").length === 3) h.sim.records.release("heartbeats");
    }
    const kinds = messages.map((m) => m.delta.case);
    const firstContent = kinds.indexOf("start");
    expect(firstContent).toBeGreaterThanOrEqual(3);
    expect(kinds.slice(0, firstContent).every((k) => k === "heartbeat")).toBe(true);
    expect(messages.map((m) => m.sequence)).toEqual(messages.map((_, i) => BigInt(i)));
    expect(textOf(messages)).toBe(simulatedText(1, 3));
  });

  it("sends none unless asked", async () => {
    const client = chatClient(transports(h.url)["grpc (connect-node, h2)"]!);
    const messages = await collect(client.streamChat(userRequest("sim", "#sim ttft_ms=200 tokens=2")));
    expect(messages.some((m) => m.delta.case === "heartbeat")).toBe(false);
  });

  it("rejects an interval out of range", async () => {
    const client = chatClient(transports(h.url)["grpc (connect-node, h2)"]!);
    const { error } = await outcome(client, "sim", "hi", { streamOptions: create(StreamOptionsSchema, { heartbeatIntervalMs: 5 }) });
    expect(error?.code).toBe(Code.InvalidArgument);
    expect(error?.rawMessage).toContain("stream_options.heartbeat_interval_ms");
  });

  it("pings HTTP/2 connections", async () => {
    // A gateway of its own: a PING not answered within one interval closes the
    // session, and 50 ms is an interval a loaded machine can miss, which would
    // fail the other HTTP/2 streams here for a reason they are not about.
    const pinging = await startHarness({ server: { keepaliveMs: 50 } });
    const session = h2connect(pinging.url);
    try {
      await once(session, "connect");
      const [payload] = (await once(session, "ping")) as [Buffer];
      expect(payload.length).toBe(8);
    } finally {
      session.destroy();
      await pinging.close();
    }
  });
});
