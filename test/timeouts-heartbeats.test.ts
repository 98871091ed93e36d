import { connect as h2connect } from "node:http2";
import { once } from "node:events";
import { setTimeout as delay } from "node:timers/promises";
import { create } from "@bufbuild/protobuf";
import { Code, ConnectError } from "@connectrpc/connect";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { StreamOptionsSchema } from "../gen/sluice/v1/chat_service_pb.js";
import type { StreamChatResponse } from "../gen/sluice/v1/chat_service_pb.js";
import { simulatedText } from "../src/simulator/text.js";
import { type ChatClient, chatClient, collect, textOf, transports, userRequest } from "./helpers/clients.js";
import { type Harness, PROVIDER_KINDS, startHarness } from "./helpers/harness.js";

async function outcome(client: ChatClient, text: string, options: Parameters<typeof userRequest>[2] = {}) {
  const received: StreamChatResponse[] = [];
  try {
    for await (const m of client.streamChat(userRequest("sim", text, options))) received.push(m);
    return { received, error: undefined };
  } catch (e) {
    return { received, error: ConnectError.from(e) };
  }
}

describe.each(PROVIDER_KINDS)("per-phase timeouts, %s upstream", (kind) => {
  let h: Harness;
  let client: ChatClient;
  beforeAll(async () => {
    h = await startHarness({ kind, provider: { timeouts: { headersMs: 300, firstTokenMs: 300, idleMs: 200, totalMs: 1500 } } });
    client = chatClient(transports(h.url)["grpc (connect-node, h2)"]!);
  });
  afterAll(() => h.close());

  const cases: Array<[string, string, string]> = [
    ["headers", "#sim headers_ms=5000 tag=t-headers", "headers timeout: provider simulator sent no response headers within 300 ms"],
    ["first token", "#sim ttft_ms=5000 ping_ms=50 tag=t-first", "first-token timeout: provider simulator sent no content within 300 ms of its response headers"],
    ["idle", "#sim fail=stall fail_at=3 tag=t-idle", "idle timeout: provider simulator sent nothing for 200 ms"],
    ["total", "#sim tokens=1000 delay_ms=10 tag=t-total", "total timeout: provider simulator did not finish within 1500 ms"],
  ];
  for (const [phase, text, message] of cases) {
    it(`${phase}: UNAVAILABLE naming the phase, upstream aborted`, async () => {
      const tag = /tag=(\S+)/.exec(text)![1]!;
      const { received, error } = await outcome(client, text);
      expect(error?.code).toBe(Code.Unavailable);
      expect(error?.rawMessage).toBe(message);
      expect(received.some((m) => m.delta.case === "finish")).toBe(false);
      const record = await h.sim.records.waitFor((r) => r.tag === tag && r.endedAt !== undefined, 5000);
      expect(record.outcome).toBe("client_closed");
    });
  }

  it("pings keep a silent upstream within the idle timeout (but are not content)", async () => {
    const { received, error } = await outcome(client, "#sim ttft_ms=250 ping_ms=40 delay_ms=120 tokens=4");
    expect(error).toBeUndefined();
    expect(textOf(received)).toBe(simulatedText(1, 4));
  });

  it("without pings the same silence is an idle timeout", async () => {
    const { error } = await outcome(client, "#sim delay_ms=280 tokens=3");
    expect(error?.rawMessage).toMatch(/^idle timeout/);
  });

  it("pings before the first event are tolerated", async () => {
    const { received, error } = await outcome(client, "#sim ping_every=1 tokens=5 eol=crlf");
    expect(error).toBeUndefined();
    expect(textOf(received)).toBe(simulatedText(1, 5));
  });

  it("a slow client is not upstream silence: pausing longer than the idle timeout is fine", async () => {
    const messages = client.streamChat(userRequest("sim", "#sim tokens=6"));
    const received: StreamChatResponse[] = [];
    for await (const m of messages) {
      received.push(m);
      if (received.length === 2) await delay(500); // the behaviour under test: a consumer that stalls
    }
    expect(textOf(received)).toBe(simulatedText(1, 6));
    expect(received.at(-1)!.delta.case).toBe("finish");
  });

  it("before the first delta, failures are plain RPC errors with nothing streamed", async () => {
    for (const fail of ["drop", "malformed", "error_event"]) {
      const { received, error } = await outcome(client, `#sim fail=${fail} fail_at=0`);
      expect(received, fail).toEqual([]);
      expect(error, fail).toBeDefined();
    }
  });
});

describe("heartbeats", () => {
  let h: Harness;
  beforeAll(async () => {
    h = await startHarness({ server: { keepaliveMs: 50 } });
  });
  afterAll(() => h.close());

  it("sends Heartbeat messages during silence when asked, sequence stays gap-free", async () => {
    const client = chatClient(transports(h.url)["connect (connect-node, HTTP/1.1)"]!);
    const messages = await collect(
      client.streamChat(userRequest("sim", "#sim ttft_ms=400 tokens=3", { streamOptions: create(StreamOptionsSchema, { heartbeatIntervalMs: 50 }) })),
    );
    const kinds = messages.map((m) => m.delta.case);
    const firstContent = kinds.indexOf("start");
    expect(kinds.slice(0, firstContent).every((k) => k === "heartbeat")).toBe(true);
    expect(firstContent).toBeGreaterThanOrEqual(3);
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
    const { error } = await outcome(client, "hi", { streamOptions: create(StreamOptionsSchema, { heartbeatIntervalMs: 5 }) });
    expect(error?.code).toBe(Code.InvalidArgument);
    expect(error?.rawMessage).toContain("stream_options.heartbeat_interval_ms");
  });

  it("pings HTTP/2 connections", async () => {
    const session = h2connect(h.url);
    try {
      await once(session, "connect");
      const [payload] = (await once(session, "ping")) as [Buffer];
      expect(payload.length).toBe(8);
    } finally {
      session.destroy();
    }
  });
});
