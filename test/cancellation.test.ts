import { Code } from "@connectrpc/connect";
import * as grpc from "@grpc/grpc-js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { simulatedText } from "../src/simulator/text.js";
import { CANCEL_CLIENTS, cancelAfter } from "./helpers/cancel.js";
import { chatClient, collect, grpcJsStream, textOf, transports, userRequest } from "./helpers/clients.js";
import { FAR_TIMEOUTS, type Harness, startHarness, WIRE_KINDS } from "./helpers/harness.js";
import { rpcUntilError } from "./helpers/until-error.js";

/**
 * The client deadline in the deadline tests. A deadline is a duration, so one
 * is needed, but nothing is asserted about how fast anything happened: it only
 * has to leave room for the request (and a few tokens) to reach the simulator
 * on a loaded machine. Every upstream stalls, and every gateway timeout is far
 * away, so the deadline is the only thing that can end those streams.
 */
const DEADLINE_MS = 5_000;

/**
 * A deadline the server alone enforces: the header without the client's own
 * timer. With `timeoutMs` the client's timer races the server's, and which one
 * wins (which side ends the stream, and what the gateway logs) depends on
 * scheduling.
 */
const serverDeadline = { headers: { "grpc-timeout": `${DEADLINE_MS}m` } };

describe.each(WIRE_KINDS)("%s upstream", (kind) => {
  let h: Harness;
  beforeAll(async () => {
    h = await startHarness({ kind, models: { sim: "sim-1" }, provider: { timeouts: FAR_TIMEOUTS } });
  });
  afterAll(() => h.close());

  const endLog = (requestId: string | undefined) => h.logs().find((l) => l.event === "stream.end" && l.requestId === requestId);

  describe("a client that cancels aborts the upstream request", () => {
    for (const kind of CANCEL_CLIENTS) {
      it(kind, async () => {
        const tag = `cancel-${kind.replace(/\W+/g, "-")}`;
        // The upstream stalls after 5 tokens and never ends on its own: the
        // simulator seeing its connection close can only be the cancel.
        const { received, record } = await cancelAfter(h, kind, tag, 5);
        expect(received).toBe(5);
        expect(record.outcome).toBe("client_closed");
        expect(record.tokensWritten).toBe(5);
        expect(endLog(record.requestId)).toMatchObject({ outcome: "canceled" });
      });
    }
  });

  // Concurrent: each waits out its own deadline, and they share nothing but the harness.
  describe.concurrent("deadlines", () => {
    it("a Connect deadline mid-stream ends with DEADLINE_EXCEEDED, never OK, and closes upstream", async ({ expect }) => {
      const client = chatClient(transports(h.url)["grpc (connect-node, h2)"]!);
      const request = userRequest("sim", "#sim tokens=2000 fail=stall fail_at=3 tag=deadline-connect");
      const { received, error } = await rpcUntilError(client.streamChat(request, serverDeadline));
      expect(error?.code).toBe(Code.DeadlineExceeded);
      // Mid-stream: everything the upstream wrote arrived before the deadline, and no finish.
      expect(textOf(received)).toBe(simulatedText(1, 3));
      expect(received.some((m) => m.delta.case === "finish")).toBe(false);
      const record = await h.sim.records.waitFor((r) => r.tag === "deadline-connect" && r.endedAt !== undefined, 30_000);
      expect(record.outcome).toBe("client_closed");
      expect(endLog(record.requestId)).toMatchObject({ outcome: "deadline_exceeded" });
    });

    it("a Connect-protocol deadline over HTTP/1.1 (connect-timeout-ms) does the same", async ({ expect }) => {
      const client = chatClient(transports(h.url)["connect (connect-node, HTTP/1.1)"]!);
      const request = userRequest("sim", "#sim tokens=2000 fail=stall fail_at=2 tag=deadline-h1");
      await expect(collect(client.streamChat(request, { timeoutMs: DEADLINE_MS }))).rejects.toMatchObject({ code: Code.DeadlineExceeded });
      const record = await h.sim.records.waitFor((r) => r.tag === "deadline-h1" && r.endedAt !== undefined, 30_000);
      expect(record.outcome).toBe("client_closed");
      expect(record.tokensWritten).toBe(2);
    });

    it("a grpc-js deadline before the response headers ends with DEADLINE_EXCEEDED and closes upstream", async ({ expect }) => {
      // The simulator would send headers only after 10 minutes.
      const request = userRequest("sim", "#sim headers_ms=600000 tag=deadline-grpcjs");
      const s = grpcJsStream(h.url, request, { deadline: new Date(Date.now() + DEADLINE_MS) });
      const error = await s.messages.then(
        () => undefined,
        (e: grpc.ServiceError) => e,
      );
      s.close();
      expect(error?.code).toBe(grpc.status.DEADLINE_EXCEEDED);
      const record = await h.sim.records.waitFor((r) => r.tag === "deadline-grpcjs" && r.endedAt !== undefined, 30_000);
      expect(record.outcome).toBe("client_closed");
      expect(record.headersAt).toBeUndefined();
    });

    it("the server sees the deadline: the end log says deadline_exceeded", async ({ expect }) => {
      const client = chatClient(transports(h.url)["grpc (connect-node, h2)"]!);
      const request = userRequest("sim", "#sim ttft_ms=600000 tag=deadline-log");
      await expect(collect(client.streamChat(request, serverDeadline))).rejects.toMatchObject({ code: Code.DeadlineExceeded });
      const record = await h.sim.records.waitFor((r) => r.tag === "deadline-log" && r.endedAt !== undefined, 30_000);
      expect(record.outcome).toBe("client_closed");
      expect(endLog(record.requestId)).toMatchObject({ outcome: "deadline_exceeded" });
    });
  });

  describe("normal completion", () => {
    it("is logged as completed, not as a cancel, though connect aborts the handler signal afterwards", async () => {
      const client = chatClient(transports(h.url)["grpc (connect-node, h2)"]!);
      await collect(client.streamChat(userRequest("sim", "#sim tokens=3 tag=normal")));
      const record = await h.sim.records.waitFor((r) => r.tag === "normal" && r.endedAt !== undefined, 30_000);
      expect(record.outcome).toBe("completed");
      const ends = h.logs().filter((l) => l.event === "stream.end" && l.requestId === record.requestId);
      expect(ends).toHaveLength(1);
      expect(ends[0]).toMatchObject({ outcome: "completed", finishReason: "stop", outputTokens: 3 });
    });
  });
});
