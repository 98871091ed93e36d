import { type ClientHttp2Stream, constants as h2, connect as h2connect } from "node:http2";
import { toBinary } from "@bufbuild/protobuf";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { StreamChatRequestSchema } from "../gen/sluice/v1/chat_service_pb.js";
import { userRequest } from "./helpers/clients.js";
import { FAR_TIMEOUTS, type Harness, startHarness } from "./helpers/harness.js";
import { scrape } from "./helpers/prometheus.js";
import { grpcFrame } from "./helpers/raw.js";

/**
 * HTTP/2 readers that grant no flow-control window (SETTINGS_INITIAL_WINDOW_SIZE
 * 0, never a WINDOW_UPDATE): the gateway can send them headers and nothing
 * else, so every stream stalls on its first write. A hundred of them at once,
 * reset by the client, or by the gateway once `server.sendTimeoutMs` passes;
 * plain and resumable (a resumable stream outlives its client: it detaches
 * and reads its upstream to the end). However they end, the active-streams
 * gauge comes back to 0: nothing stays held for a client that is gone.
 */
const READERS = 100;
type Edge = "gRPC" | "Connect" | "Chat Completions";

function request(edge: Edge, prompt: string, resumable: boolean): { headers: Record<string, string>; body: Buffer } {
  if (edge === "Chat Completions") {
    return {
      headers: { ":method": "POST", ":path": "/v1/chat/completions", "content-type": "application/json" },
      body: Buffer.from(JSON.stringify({ model: "sim", stream: true, ...(resumable ? { stream_options: { resumable: true } } : {}), messages: [{ role: "user", content: prompt }] })),
    };
  }
  const body = grpcFrame(toBinary(StreamChatRequestSchema, userRequest("sim", prompt, resumable ? { streamOptions: { resumable: true } } : {})));
  const path = "/sluice.v1.ChatService/StreamChat";
  return edge === "gRPC"
    ? { headers: { ":method": "POST", ":path": path, "content-type": "application/grpc", te: "trailers" }, body }
    : { headers: { ":method": "POST", ":path": path, "content-type": "application/connect+proto", "connect-protocol-version": "1" }, body };
}

let h: Harness;
let runs = 0;
beforeAll(async () => {
  h = await startHarness({ models: { sim: "sim-1" }, provider: { timeouts: FAR_TIMEOUTS }, server: { sendTimeoutMs: 500 } });
});
afterAll(() => h.close());

/** Opens `READERS` zero-window streams on one connection and waits until the upstream has every one of their requests. */
async function zeroWindowReaders(edge: Edge, tokens: number, resumable: boolean) {
  const session = h2connect(h.url, { settings: { initialWindowSize: 0 } });
  session.on("error", () => undefined);
  const prefix = `zw-${++runs}-`;
  const streams: ClientHttp2Stream[] = [];
  for (let i = 0; i < READERS; i++) {
    const { headers, body } = request(edge, `#sim tokens=${tokens} tag=${prefix}${i}`, resumable);
    const stream = session.request(headers);
    stream.on("error", () => undefined);
    stream.end(body);
    streams.push(stream);
  }
  // Generous: on a loaded machine a hundred streams take a while to reach the upstream.
  await Promise.all(streams.map((_, i) => h.sim.records.waitFor((r) => r.tag === `${prefix}${i}`, 60_000)));
  return { session, streams };
}

async function expectNothingActive() {
  expect(await h.sluice.registry.idle(60_000)).toBe(true);
  const metrics = await scrape(`${h.url}/metrics`);
  expect(Number(metrics.families.find((f) => f.name === "sluice_streams_active")!.metrics[0]!.value)).toBe(0);
}

describe.each<Edge>(["gRPC", "Connect", "Chat Completions"])("a hundred zero-window HTTP/2 readers, %s", (edge) => {
  for (const resumable of [false, true]) {
    const kind = resumable ? "resumable" : "plain";
    it(`${kind}, reset by the client while the gateway waits to write: none stays active`, async () => {
      // Short answers: the upstream has finished by the time a detached resumable stream reads on.
      const { session, streams } = await zeroWindowReaders(edge, 30, resumable);
      for (const stream of streams) stream.close(h2.NGHTTP2_CANCEL);
      await expectNothingActive();
      session.destroy();
    }, 150_000);

    it(`${kind}, reset by the gateway past server.sendTimeoutMs: none stays active`, async () => {
      // Long enough to fill the write buffer (the gateway then waits to write), short enough that a detached stream reads its upstream to the end.
      const { session } = await zeroWindowReaders(edge, 3_000, resumable);
      await expectNothingActive();
      session.destroy();
    }, 150_000);
  }
});
