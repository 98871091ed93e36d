import { Code, ConnectError, createClient } from "@connectrpc/connect";
import { createGrpcTransport } from "@connectrpc/connect-node";
import { status as GrpcStatus, Metadata } from "@grpc/grpc-js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ServerReflection } from "../gen/grpc/reflection/v1/reflection_pb.js";
import { type Simulator, startSimulator } from "../src/simulator/server.js";
import { chatClient, transports, userRequest } from "./helpers/clients.js";
import { startGatewayProcess } from "./helpers/gateway-process.js";
import { type Harness, startHarness } from "./helpers/harness.js";
import { connectHealth, grpcJsHealth, ServingStatus } from "./helpers/health-clients.js";

const CHAT = "sluice.v1.ChatService";
const WATCH_ROUTE = "/grpc.health.v1.Health/Watch";

describe("gRPC health checking (grpc.health.v1.Health)", () => {
  let h: Harness;
  beforeAll(async () => {
    h = await startHarness({ models: { sim: "sim-1?tokens=3" } });
  });
  afterAll(() => h.close());

  it("Check: the server as a whole and sluice.v1.ChatService read SERVING, over connect-es and grpc-js", async () => {
    const connect = connectHealth(h.url);
    const grpcJs = grpcJsHealth(new URL(h.url).host);
    try {
      for (const service of ["", CHAT]) {
        expect((await connect.check({ service })).status).toBe(ServingStatus.SERVING);
        expect(await grpcJs.check(service)).toBe(ServingStatus.SERVING);
      }
    } finally {
      grpcJs.close();
    }
  });

  it("Check: a service that is not served here is NOT_FOUND", async () => {
    const error = await connectHealth(h.url)
      .check({ service: "no.such.Service" })
      .then(() => undefined, ConnectError.from);
    expect(error?.code).toBe(Code.NotFound);
    const grpcJs = grpcJsHealth(new URL(h.url).host);
    try {
      await expect(grpcJs.check("no.such.Service")).rejects.toMatchObject({ code: GrpcStatus.NOT_FOUND });
    } finally {
      grpcJs.close();
    }
  });

  it("List: every service and the server as a whole", async () => {
    const { statuses } = await connectHealth(h.url).list({});
    expect(Object.fromEntries(Object.entries(statuses).map(([name, r]) => [name, r.status]))).toEqual({
      "": ServingStatus.SERVING,
      [CHAT]: ServingStatus.SERVING,
      "sluice.v1.EmbeddingService": ServingStatus.SERVING,
      "sluice.v1.BatchService": ServingStatus.SERVING,
      "sluice.v1.ResponsesService": ServingStatus.SERVING,
    });
  });

  it("is listed by server reflection", async () => {
    const client = createClient(ServerReflection, createGrpcTransport({ baseUrl: h.url }));
    async function* one() {
      yield { messageRequest: { case: "listServices" as const, value: "" } };
    }
    for await (const res of client.serverReflectionInfo(one())) {
      expect(res.messageResponse.case).toBe("listServicesResponse");
      const names = res.messageResponse.case === "listServicesResponse" ? res.messageResponse.value.service.map((s) => s.name) : [];
      expect(names).toContain("grpc.health.v1.Health");
    }
  });

  it("Watch sends the current status at once; a client cancel ends the call and leaves nothing waiting", async () => {
    const controller = new AbortController();
    const seen: ServingStatus[] = [];
    const error = await (async () => {
      const options = { signal: controller.signal, headers: { "x-request-id": "watch-cancel-connect" } };
      for await (const res of connectHealth(h.url).watch({ service: CHAT }, options)) {
        seen.push(res.status);
        controller.abort();
      }
    })().then(() => undefined, ConnectError.from);
    expect(seen).toEqual([ServingStatus.SERVING]);
    expect(error?.code).toBe(Code.Canceled);
    const line = await h.waitForLog((l) => l.event === "access" && l.requestId === "watch-cancel-connect");
    expect(line).toMatchObject({ route: WATCH_ROUTE, code: "canceled" });
    expect(h.sluice.server.health.watchers).toBe(0);
  });

  it("Watch: a grpc-js cancel ends the call the same way", async () => {
    const grpcJs = grpcJsHealth(new URL(h.url).host);
    try {
      const metadata = new Metadata();
      metadata.set("x-request-id", "watch-cancel-grpcjs");
      const watch = grpcJs.watch("", metadata);
      expect(await watch.received(1)).toEqual([ServingStatus.SERVING]);
      watch.call.cancel();
      expect((await watch.ended).code).toBe(GrpcStatus.CANCELLED);
      const line = await h.waitForLog((l) => l.event === "access" && l.requestId === "watch-cancel-grpcjs");
      expect(line).toMatchObject({ route: WATCH_ROUTE, code: "canceled" });
      expect(h.sluice.server.health.watchers).toBe(0);
    } finally {
      grpcJs.close();
    }
  });

  it("Watch with a client deadline ends DEADLINE_EXCEEDED, not OK", async () => {
    const seen: ServingStatus[] = [];
    const error = await (async () => {
      for await (const res of connectHealth(h.url).watch({ service: "" }, { timeoutMs: 200 })) seen.push(res.status);
    })().then(() => undefined, ConnectError.from);
    expect(seen.filter((s) => s !== ServingStatus.SERVING)).toEqual([]); // at most the first status, on a slow machine none
    expect(error?.code).toBe(Code.DeadlineExceeded);
  });
});

describe("health follows the drain", () => {
  it("from the start of a drain Check, List and Watch read NOT_SERVING; watchers, unknown services included, end with OK when the server closes", async () => {
    const h = await startHarness({ models: { sim: "sim-1" } });
    const grpcJs = grpcJsHealth(new URL(h.url).host);
    try {
      const overall = grpcJs.watch("");
      const chat = grpcJs.watch(CHAT);
      const unknown = grpcJs.watch("no.such.Service");
      let unknownEnded = false;
      void unknown.ended.then(() => (unknownEnded = true));
      const connectSeen: ServingStatus[] = [];
      const connectWatch = (async () => {
        for await (const res of connectHealth(h.url).watch({ service: "" })) connectSeen.push(res.status);
      })();
      expect(await overall.received(1)).toEqual([ServingStatus.SERVING]);
      expect(await chat.received(1)).toEqual([ServingStatus.SERVING]);
      expect(await unknown.received(1)).toEqual([ServingStatus.SERVICE_UNKNOWN]);

      // A stream in flight holds the drain open until the test ends it.
      const streamAbort = new AbortController();
      const stream = chatClient(transports(h.url)["grpc (connect-node, h2)"]!).streamChat(userRequest("sim", "#sim tokens=100000 delay_ms=5"), {
        signal: streamAbort.signal,
      });
      const iterator = stream[Symbol.asyncIterator]();
      await iterator.next();
      const stopping = h.sluice.shutdown(60_000);

      expect(await overall.received(2)).toEqual([ServingStatus.SERVING, ServingStatus.NOT_SERVING]);
      expect(await chat.received(2)).toEqual([ServingStatus.SERVING, ServingStatus.NOT_SERVING]);
      const prober = grpcJsHealth(new URL(h.url).host); // a probe's fresh connection during the drain
      try {
        expect(await prober.check("")).toBe(ServingStatus.NOT_SERVING);
        expect(await prober.check(CHAT)).toBe(ServingStatus.NOT_SERVING);
      } finally {
        prober.close();
      }
      expect((await connectHealth(h.url).check({ service: "" })).status).toBe(ServingStatus.NOT_SERVING);
      const { statuses } = await connectHealth(h.url).list({});
      expect(statuses[""]?.status).toBe(ServingStatus.NOT_SERVING);
      expect((await fetch(`${h.url}/readyz`)).status).toBe(503);
      expect(unknownEnded).toBe(false); // an unknown service's watch stays open

      streamAbort.abort();
      await iterator.return?.();
      await stopping;
      for (const watch of [overall, chat, unknown]) expect((await watch.ended).code).toBe(GrpcStatus.OK);
      expect(unknown.statuses).toEqual([ServingStatus.SERVICE_UNKNOWN]);
      await connectWatch;
      expect(connectSeen).toEqual([ServingStatus.SERVING, ServingStatus.NOT_SERVING]);
      expect(h.sluice.server.health.watchers).toBe(0);
    } finally {
      grpcJs.close();
      await h.close();
    }
  });

  describe("through SIGTERM to a gateway process", () => {
    let sim: Simulator;
    beforeAll(async () => {
      sim = await startSimulator();
    });
    afterAll(() => sim.close());

    it("a grpc-js Watch sees SERVING, then NOT_SERVING, then the call ends with OK and the process exits 0", async () => {
      const gw = await startGatewayProcess({
        providers: { sim: { kind: "openai", baseUrl: sim.openAiBaseUrl } },
        models: { sim: { provider: "sim", model: "sim-1" } },
      });
      const grpcJs = grpcJsHealth(new URL(gw.url).host);
      try {
        const watch = grpcJs.watch("");
        expect(await watch.received(1)).toEqual([ServingStatus.SERVING]);
        const exited = gw.stop();
        expect((await watch.ended).code).toBe(GrpcStatus.OK);
        expect(watch.statuses).toEqual([ServingStatus.SERVING, ServingStatus.NOT_SERVING]);
        expect(await exited).toBe(0);
      } finally {
        grpcJs.close();
        if (gw.child.exitCode === null) gw.child.kill("SIGKILL");
      }
    });
  });
});
