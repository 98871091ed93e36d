import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { simulatedText } from "../src/simulator/text.js";
import { cancelAfter } from "./helpers/cancel.js";
import { chatClient, collect, textOf, transports, userRequest } from "./helpers/clients.js";
import { FAR_TIMEOUTS, type Harness, startHarness } from "./helpers/harness.js";

/**
 * A whole gateway (real port, real clients) whose upstream client is given
 * to it (SluiceOptions.upstream): the in-process simulator, no upstream
 * socket. The same scripts and assertions as over loopback.
 */
let h: Harness;
beforeAll(async () => {
  h = await startHarness({ upstream: "in-process", provider: { timeouts: FAR_TIMEOUTS } });
});
afterAll(() => h.close());

describe("the gateway with its upstream in process", () => {
  it("serves the simulator's script to a real client, and the simulator records the gateway's request", async () => {
    const messages = await collect(chatClient(transports(h.url)["grpc (connect-node, h2)"]!).streamChat(userRequest("sim", "#sim tokens=5 seed=9 tag=served")));
    expect(textOf(messages)).toBe(simulatedText(9, 5));
    const record = h.sim.records.all().find((r) => r.tag === "served");
    expect(record).toMatchObject({ outcome: "completed", tokensWritten: 5 });
    expect(record?.requestId).toMatch(/\S/);
  });

  it("a client's cancel reaches the in-process upstream as its connection closing", async () => {
    const { received, record } = await cancelAfter(h, "grpc (connect-node, h2)", "cancel-in-process", 3);
    expect(received).toBe(3);
    expect(record).toMatchObject({ outcome: "client_closed", tokensWritten: 3 });
    await h.sim.whenNoConnections(30_000);
  });
});
