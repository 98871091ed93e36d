import { createInterface } from "node:readline";
import { Code } from "@connectrpc/connect";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { StreamChatResponse } from "../gen/sluice/v1/chat_service_pb.js";
import { type Simulator, startSimulator } from "../src/simulator/server.js";
import { simulatedText } from "../src/simulator/text.js";
import { chatClient, collect, textOf, transports, userRequest } from "./helpers/clients.js";
import { type GatewayProcess, startGatewayProcess } from "./helpers/gateway-process.js";
import { rpcUntilError } from "./helpers/until-error.js";

let sim: Simulator;
beforeAll(async () => {
  sim = await startSimulator();
});
afterAll(() => sim.close());

function gateway(drainMs: number): Promise<GatewayProcess> {
  return startGatewayProcess({
    server: { drainMs },
    providers: { sim: { kind: "openai", baseUrl: sim.openAiBaseUrl } },
    models: { sim: { provider: "sim", model: "sim-1" } },
  });
}

/** Resolves when the gateway logs `event`: matched per stdout line, however the pipe splits or joins its writes. */
function logged(gw: GatewayProcess, event: string): Promise<void> {
  return new Promise((resolve) => {
    createInterface({ input: gw.child.stdout! }).on("line", (line) => line.includes(`"event":"${event}"`) && resolve());
  });
}

const exitCode = (gw: GatewayProcess) =>
  new Promise<number | null>((resolve) => {
    if (gw.child.exitCode !== null) resolve(gw.child.exitCode);
    else gw.child.once("exit", (code) => resolve(code));
  });

/** Consumes a stream, calling `onDelta` after each message; returns what arrived and how it ended. */
function consume(url: string, text: string, onDelta?: (received: readonly StreamChatResponse[]) => void) {
  return rpcUntilError(chatClient(transports(url)["grpc (connect-node, h2)"]!).streamChat(userRequest("sim", text)), onDelta);
}

describe("graceful shutdown on SIGTERM", () => {
  it("lets an in-flight stream finish within the drain period, turns /readyz unhealthy, refuses new streams, exits 0", async () => {
    // The upstream holds after 5 tokens until the probes below are done, so
    // the stream is still in flight while they run, however slow the machine;
    // the drain period only has to cover what is left after the release.
    const gw = await gateway(15_000);
    const exited = exitCode(gw);
    const draining = logged(gw, "server.draining");
    let signalled = false;
    const inFlight = consume(gw.url, "#sim tokens=40 hold_at=5 tag=drain-ok", (received) => {
      if (textOf(received) !== simulatedText(1, 5) || signalled) return;
      signalled = true;
      gw.child.kill("SIGTERM");
    });
    // Wait for the drain to begin (the gateway's own log line), then probe.
    await draining;
    const readyDuringDrain = (await fetch(`${gw.url}/readyz`)).status;
    const lateError = (await consume(gw.url, "#sim tokens=2")).error;
    sim.records.release("drain-ok");
    const { received, error } = await inFlight;
    expect(error).toBeUndefined();
    expect(textOf(received)).toBe(simulatedText(1, 40));
    expect(received.at(-1)!.delta.case).toBe("finish");
    expect(readyDuringDrain).toBe(503);
    expect(lateError?.code).toBe(Code.Unavailable);
    expect(lateError?.rawMessage).toMatch(/shutting down/);
    expect(await exited).toBe(0);
  });

  it("ends streams still running after the drain period with UNAVAILABLE and aborts upstream, exits 0", async () => {
    // The upstream stalls after 5 tokens and never ends on its own (the
    // gateway's own timeouts are 30 s and more away): only the end of the
    // drain period can end this stream and close the simulator's connection.
    const gw = await gateway(300);
    const exited = exitCode(gw);
    let signalled = false;
    const { received, error } = await consume(gw.url, "#sim tokens=5000 fail=stall fail_at=5 tag=drain-cut", (r) => {
      if (textOf(r) === simulatedText(1, 5) && !signalled) {
        signalled = true;
        gw.child.kill("SIGTERM");
      }
    });
    expect(signalled).toBe(true);
    expect(received.some((m) => m.delta.case === "finish")).toBe(false);
    expect(error?.code).toBe(Code.Unavailable);
    expect(error?.rawMessage).toMatch(/shutting down/);
    const record = await sim.records.waitFor((r) => r.tag === "drain-cut" && r.endedAt !== undefined, 30_000);
    expect(record.outcome).toBe("client_closed");
    expect(record.tokensWritten).toBe(5);
    expect(await exited).toBe(0);
  });

  it("exits at once on a second signal", async () => {
    const gw = await gateway(60_000);
    const exited = exitCode(gw);
    let signalled = false;
    const stream = consume(gw.url, "#sim tokens=5000 fail=stall fail_at=3 tag=drain-twice", (r) => {
      if (textOf(r) === simulatedText(1, 3) && !signalled) {
        signalled = true;
        gw.child.kill("SIGTERM");
        void logged(gw, "server.draining").then(() => gw.child.kill("SIGTERM"));
      }
    });
    // With a 60 s drain and a stalled stream, only the second signal can end the process within the test's time.
    expect(await exited).toBe(1);
    const { error } = await stream;
    expect(error).toBeDefined();
  });
});

describe("a stopped gateway leaves nothing open upstream", () => {
  it("the simulator has no open connections after the gateway exits", async () => {
    const gw = await gateway(100);
    await collect(chatClient(transports(gw.url)["grpc (connect-node, h2)"]!).streamChat(userRequest("sim", "#sim tokens=3")));
    expect(sim.stats().openConnections).toBeGreaterThan(0);
    expect(await gw.stop()).toBe(0);
    await sim.whenNoConnections(30_000);
    expect(sim.stats()).toMatchObject({ openConnections: 0, activeRequests: 0 });
  });
});
