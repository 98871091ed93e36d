import { Code, ConnectError } from "@connectrpc/connect";
import * as grpc from "@grpc/grpc-js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { now } from "../src/simulator/records.js";
import { CANCEL_CLIENTS, cancelAfter } from "./helpers/cancel.js";
import { chatClient, collect, grpcJsStream, transports, userRequest } from "./helpers/clients.js";
import { type Harness, PROVIDER_KINDS, startHarness } from "./helpers/harness.js";

describe.each(PROVIDER_KINDS)("%s upstream", (kind) => {
  let h: Harness;
  beforeAll(async () => {
    h = await startHarness({ kind, models: { sim: "sim-1" } });
  });
  afterAll(() => h.close());

  describe("a client that cancels aborts the upstream request at once", () => {
    for (const kind of CANCEL_CLIENTS) {
      it(kind, async () => {
        const tag = `cancel-${kind.replace(/\W+/g, "-")}`;
        const { cancelledAt, received, record } = await cancelAfter(h, kind, tag, 5);
        expect(record.outcome).toBe("client_closed");
        expect(record.clientClosedAt! - cancelledAt).toBeLessThan(100);
        // Tokens the simulator produced after the client left: a handful at most.
        expect(record.tokensWritten - received).toBeLessThanOrEqual(5);
        const end = h.logs().find((l) => l.event === "stream.end" && l.outcome === "canceled" && l.requestId === record.requestId);
        expect(end).toBeDefined();
      });
    }
  });

  describe("deadlines", () => {
    it("a Connect deadline mid-stream ends with DEADLINE_EXCEEDED, never OK, and closes upstream", async () => {
      const client = chatClient(transports(h.url)["grpc (connect-node, h2)"]!);
      const received: string[] = [];
      let error: ConnectError | undefined;
      const started = now();
      try {
        for await (const m of client.streamChat(userRequest("sim", "#sim tokens=2000 delay_ms=5 tag=deadline-connect"), { timeoutMs: 250 })) {
          received.push(m.delta.case ?? "");
        }
      } catch (e) {
        error = ConnectError.from(e);
      }
      expect(error?.code).toBe(Code.DeadlineExceeded);
      expect(received).not.toContain("finish");
      expect(received.length).toBeGreaterThan(3);
      const record = await h.sim.records.waitFor((r) => r.tag === "deadline-connect" && r.endedAt !== undefined, 5000);
      expect(record.outcome).toBe("client_closed");
      expect(record.clientClosedAt! - started).toBeLessThan(250 + 100);
    });

    it("a Connect-protocol deadline over HTTP/1.1 (connect-timeout-ms) does the same", async () => {
      const client = chatClient(transports(h.url)["connect (connect-node, HTTP/1.1)"]!);
      await expect(collect(client.streamChat(userRequest("sim", "#sim tokens=2000 delay_ms=5 tag=deadline-h1"), { timeoutMs: 200 }))).rejects.toMatchObject({
        code: Code.DeadlineExceeded,
      });
      const record = await h.sim.records.waitFor((r) => r.tag === "deadline-h1" && r.endedAt !== undefined, 5000);
      expect(record.outcome).toBe("client_closed");
    });

    it("a grpc-js deadline before the response headers ends with DEADLINE_EXCEEDED and closes upstream", async () => {
      const started = now();
      const s = grpcJsStream(h.url, userRequest("sim", "#sim headers_ms=5000 tag=deadline-grpcjs"), { deadline: new Date(Date.now() + 200) });
      const error = await s.messages.then(
        () => undefined,
        (e: grpc.ServiceError) => e,
      );
      s.close();
      expect(error?.code).toBe(grpc.status.DEADLINE_EXCEEDED);
      const record = await h.sim.records.waitFor((r) => r.tag === "deadline-grpcjs" && r.endedAt !== undefined, 5000);
      expect(record.outcome).toBe("client_closed");
      expect(record.clientClosedAt! - started).toBeLessThan(200 + 100);
    });

    it("the server sees the deadline: the end log says deadline_exceeded", async () => {
      const client = chatClient(transports(h.url)["grpc (connect-node, h2)"]!);
      await expect(collect(client.streamChat(userRequest("sim", "#sim ttft_ms=3000 tag=deadline-log"), { timeoutMs: 150 }))).rejects.toThrow();
      const record = await h.sim.records.waitFor((r) => r.tag === "deadline-log" && r.endedAt !== undefined, 5000);
      const end = h.logs().find((l) => l.event === "stream.end" && l.requestId === record.requestId);
      expect(end).toMatchObject({ outcome: "deadline_exceeded" });
    });
  });

  describe("normal completion", () => {
    it("is logged as completed, not as a cancel, though connect aborts the handler signal afterwards", async () => {
      const client = chatClient(transports(h.url)["grpc (connect-node, h2)"]!);
      await collect(client.streamChat(userRequest("sim", "#sim tokens=3 tag=normal")));
      const record = await h.sim.records.waitFor((r) => r.tag === "normal" && r.endedAt !== undefined, 5000);
      expect(record.outcome).toBe("completed");
      const ends = h.logs().filter((l) => l.event === "stream.end" && l.requestId === record.requestId);
      expect(ends).toHaveLength(1);
      expect(ends[0]).toMatchObject({ outcome: "completed", finishReason: "stop", outputTokens: 3 });
    });
  });
});
