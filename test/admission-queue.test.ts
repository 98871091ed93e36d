import { fromBinary } from "@bufbuild/protobuf";
import { BinaryReader } from "@bufbuild/protobuf/wire";
import { Code, ConnectError } from "@connectrpc/connect";
import type * as grpc from "@grpc/grpc-js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ErrorInfoSchema, RetryInfoSchema } from "../gen/google/rpc/error_details_pb.js";
import { chatClient, collect, grpcJsStream, rpcFailure, transports, userRequest } from "./helpers/clients.js";
import { baseUrlFor, type Harness, startHarness } from "./helpers/harness.js";

let h: Harness;
beforeAll(async () => {
  h = await startHarness({
    routing: (sim) => ({
      providers: {
        narrow: { kind: "openai", baseUrl: baseUrlFor(sim, "openai"), maxConcurrent: 1, queue: { maxWaiting: 1, timeoutMs: 60_000 } },
        brief: { kind: "openai", baseUrl: baseUrlFor(sim, "openai"), maxConcurrent: 1, queue: { maxWaiting: 5, timeoutMs: 300 } },
      },
      models: { narrow: { provider: "narrow", model: "sim-1?tokens=3" }, brief: { provider: "brief", model: "sim-1?tokens=3" } },
    }),
  });
});
afterAll(() => h.close());

const client = () => chatClient(transports(h.url)["grpc (connect-node, h2)"]!);

/** A stream held open on `model` (the upstream stalls after one token) until `release()`. */
async function hold(model: string, tag: string): Promise<{ release(): Promise<void> }> {
  const abort = new AbortController();
  const done = collect(client().streamChat(userRequest(model, `#sim fail=stall fail_at=1 tag=${tag}`), { signal: abort.signal })).catch(() => undefined);
  await h.sim.records.waitFor((r) => r.tag === tag && r.outcome === "stalled", 30_000);
  return {
    async release() {
      abort.abort();
      await done;
    },
  };
}

/** google.rpc.Status from grpc-status-details-bin, decoded by hand: what any gRPC client's error-details support reads. */
function statusDetails(bytes: Buffer): Array<{ typeUrl: string; value: Uint8Array }> {
  const details: Array<{ typeUrl: string; value: Uint8Array }> = [];
  const reader = new BinaryReader(bytes);
  while (reader.pos < reader.len) {
    const [no, type] = reader.tag();
    if (no !== 3) {
      reader.skip(type);
      continue;
    }
    const any = new BinaryReader(reader.bytes());
    let typeUrl = "";
    let value: Uint8Array = new Uint8Array();
    while (any.pos < any.len) {
      const [f, t] = any.tag();
      if (f === 1) typeUrl = any.string();
      else if (f === 2) value = any.bytes();
      else any.skip(t);
    }
    details.push({ typeUrl, value });
  }
  return details;
}

describe("a provider's admission queue", () => {
  it("queues past maxConcurrent, sheds past maxWaiting with RESOURCE_EXHAUSTED and a retry delay", async () => {
    const first = await hold("narrow", "q-first");
    const queued = collect(client().streamChat(userRequest("narrow", "#sim tag=q-queued")));
    await h.sluice.gates.until("narrow", (g) => g.waiting === 1);
    const shed = await rpcFailure(collect(client().streamChat(userRequest("narrow", "#sim tag=q-shed"))));
    expect(shed.code).toBe(Code.ResourceExhausted);
    expect(shed.rawMessage).toMatch(/queue is full/);
    expect(shed.findDetails(RetryInfoSchema)[0]?.retryDelay?.seconds).toBe(1n);
    expect(shed.findDetails(ErrorInfoSchema)[0]).toMatchObject({ reason: "OVERLOADED", domain: "sluice" });
    expect(h.sim.records.all().some((r) => r.tag === "q-shed")).toBe(false);
    // The slot frees: the queued request goes through.
    await first.release();
    expect((await queued).at(-1)!.delta.case).toBe("finish");
  });

  it("the facade answers a full queue with 429 and Retry-After", async () => {
    const first = await hold("narrow", "q-first-2");
    const queued = collect(client().streamChat(userRequest("narrow", "#sim tag=q-queued-2")));
    await h.sluice.gates.until("narrow", (g) => g.waiting === 1);
    const res = await fetch(`${h.url}/v1/chat/completions`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ model: "narrow", messages: [{ role: "user", content: "hi" }] }),
    });
    expect(res.status).toBe(429);
    expect(res.headers.get("retry-after")).toBe("1");
    expect(((await res.json()) as { error: { type: string } }).error.type).toBe("rate_limit_error");
    await first.release();
    await queued;
  });

  it("grpc-js reads the same error details from grpc-status-details-bin", async () => {
    const first = await hold("narrow", "q-first-3");
    const queued = collect(client().streamChat(userRequest("narrow", "#sim tag=q-queued-3")));
    await h.sluice.gates.until("narrow", (g) => g.waiting === 1);
    const s = grpcJsStream(h.url, userRequest("narrow", "hi"));
    const error = await s.messages.then(
      () => undefined,
      (e: grpc.ServiceError) => e,
    );
    s.close();
    expect(error?.code).toBe(8); // RESOURCE_EXHAUSTED
    const details = statusDetails(error!.metadata.get("grpc-status-details-bin")[0] as Buffer);
    const retry = details.find((d) => d.typeUrl === "type.googleapis.com/google.rpc.RetryInfo")!;
    expect(fromBinary(RetryInfoSchema, retry.value).retryDelay?.seconds).toBe(1n);
    const info = details.find((d) => d.typeUrl === "type.googleapis.com/google.rpc.ErrorInfo")!;
    expect(fromBinary(ErrorInfoSchema, info.value)).toMatchObject({ reason: "OVERLOADED", domain: "sluice" });
    await first.release();
    await queued;
  });

  it("a cancelled waiter leaves the queue at once", async () => {
    const first = await hold("narrow", "q-first-4");
    const abort = new AbortController();
    const waiting = collect(client().streamChat(userRequest("narrow", "#sim tag=q-cancelled"), { signal: abort.signal })).catch((e: unknown) => ConnectError.from(e));
    await h.sluice.gates.until("narrow", (g) => g.waiting === 1);
    abort.abort();
    await h.sluice.gates.until("narrow", (g) => g.waiting === 0);
    expect(((await waiting) as ConnectError).code).toBe(Code.Canceled);
    expect(h.sim.records.all().some((r) => r.tag === "q-cancelled")).toBe(false);
    await first.release();
  });

  it("a wait longer than queue.timeoutMs is shed", async () => {
    const first = await hold("brief", "q-brief");
    const started = performance.now();
    const shed = await rpcFailure(collect(client().streamChat(userRequest("brief", "hi"))));
    expect(shed.code).toBe(Code.ResourceExhausted);
    expect(shed.rawMessage).toMatch(/no free stream within 300 ms \(queue timeout\)/);
    expect(performance.now() - started).toBeGreaterThanOrEqual(295);
    await first.release();
  });

  it("shutdown ends every wait with UNAVAILABLE", async () => {
    const first = await hold("narrow", "q-first-5");
    const waiting = rpcFailure(collect(client().streamChat(userRequest("narrow", "#sim tag=q-drained"))));
    await h.sluice.gates.until("narrow", (g) => g.waiting === 1);
    const shutdown = h.sluice.shutdown(60_000);
    const drained = await waiting;
    expect(drained.code).toBe(Code.Unavailable);
    expect(drained.rawMessage).toMatch(/shutting down/);
    await first.release();
    await shutdown;
  });
});
