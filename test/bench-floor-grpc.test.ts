import { fileURLToPath } from "node:url";
import { createClient } from "@connectrpc/connect";
import { createGrpcTransport } from "@connectrpc/connect-node";
import { request } from "undici";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Role } from "../gen/sluice/v1/chat_pb.js";
import { ChatService } from "../gen/sluice/v1/chat_service_pb.js";
import { type Simulator, startSimulator } from "../src/simulator/server.js";
import { type Started, startProcess } from "./helpers/processes.js";

/**
 * The bench's gRPC floor (bench/floor-grpc.ts, run from dist/ as the bench
 * runs it): one TextDelta per upstream SSE event, the event's data as it
 * came, and a client's departure aborting the upstream.
 */

const ROOT = fileURLToPath(new URL("..", import.meta.url));
let sim: Simulator;
let floor: Started;
let client: ReturnType<typeof createClient<typeof ChatService>>;

beforeAll(async () => {
  sim = await startSimulator();
  floor = await startProcess([`${ROOT}dist/bench/floor-grpc.js`, sim.openAiBaseUrl], (line) => typeof line.url === "string");
  client = createClient(ChatService, createGrpcTransport({ baseUrl: floor.line.url as string }));
});
afterAll(async () => {
  await floor?.stop();
  await sim?.close();
});

const ask = (prompt: string) => ({ model: "sim-1", messages: [{ role: Role.USER, content: [{ part: { case: "text" as const, value: prompt } }] }] });

describe("the gRPC floor", () => {
  it("sends each upstream event as one TextDelta of its raw data, in sequence", async () => {
    const texts: string[] = [];
    const sequences: bigint[] = [];
    for await (const m of client.streamChat(ask("#sim tokens=64 token_bytes=16"))) {
      expect(m.delta.case).toBe("text");
      if (m.delta.case === "text") texts.push(m.delta.value.text);
      sequences.push(m.sequence);
    }
    expect(texts).toHaveLength(67);
    expect(sequences).toEqual(texts.map((_, i) => BigInt(i)));
    const chunks = texts.slice(0, -1).map((t) => (JSON.parse(t) as { choices: Array<{ delta: { role?: string; content?: string }; finish_reason: string | null }> }).choices[0]!);
    expect(chunks[0]!.delta.role).toBe("assistant");
    expect(chunks.slice(1, 65).map((c) => c.delta.content!.length)).toEqual(Array(64).fill(16));
    expect(chunks[65]!.finish_reason).toBe("stop");
    expect(texts[66]).toBe("[DONE]");
  });

  it("aborts the upstream request when its client leaves", async () => {
    const controller = new AbortController();
    let received = 0;
    await expect(
      (async () => {
        for await (const _ of client.streamChat(ask("#sim tokens=100000 interval_ms=5 tag=floor-leaves"), { signal: controller.signal })) {
          if (++received === 4) controller.abort();
        }
      })(),
    ).rejects.toThrow();
    const ended = await request(`${sim.origin}/_sim/wait?tag=floor-leaves&timeout_ms=60000`);
    const record = (await ended.body.json()) as { outcome?: string; clientClosedAt?: number; tokensWritten: number };
    expect(record.outcome).not.toBe("completed");
    expect(record.clientClosedAt).toBeDefined();
    expect(record.tokensWritten).toBeLessThan(100000);
    const stats = (await (await request(floor.line.stats as string)).body.json()) as { activeStreams: unknown; eventLoopDelayMs: unknown };
    expect(stats).toMatchObject({ activeStreams: expect.any(Number), eventLoopDelayMs: expect.any(Object) });
  });
});
