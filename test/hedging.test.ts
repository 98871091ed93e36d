import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { simulatedText } from "../src/simulator/text.js";
import { chatClient, collect, textOf, transports, userRequest } from "./helpers/clients.js";
import { baseUrlFor, type Harness, startHarness } from "./helpers/harness.js";

let h: Harness;
beforeAll(async () => {
  h = await startHarness({
    routing: (sim) => ({
      providers: {
        slow: { kind: "openai", baseUrl: baseUrlFor(sim, "openai") },
        fast: { kind: "gemini", baseUrl: baseUrlFor(sim, "gemini") },
      },
      models: {
        hedged: {
          hedge: { afterMs: 200 },
          targets: [
            { provider: "slow", model: "sim-1?seed=9&ttft_ms=60000&script=hedge-slow" },
            { provider: "fast", model: "sim-1?seed=9&script=hedge-fast" },
          ],
        },
        "all-slow": {
          hedge: { afterMs: 100 },
          retry: { maxAttempts: 3 },
          targets: [
            { provider: "slow", model: "sim-1?ttft_ms=1500&script=all-slow-1" },
            { provider: "fast", model: "sim-1?ttft_ms=1500&script=all-slow-2" },
            { provider: "slow", model: "sim-1?ttft_ms=1500&script=all-slow-3" },
          ],
        },
        "unhedged-fast": { provider: "slow", model: "sim-1?seed=9&script=unhedged" },
      },
    }),
  });
});
afterAll(() => h.close());

const client = () => chatClient(transports(h.url)["grpc (connect-node, h2)"]!);
const records = (script: string) => h.sim.records.all().filter((r) => r.model.includes(`script=${script}`));

describe("hedged first token", () => {
  it("no first delta by hedge.afterMs: the next target starts; the first to answer wins and the loser is closed at once", async () => {
    const messages = await collect(client().streamChat(userRequest("hedged", "hi")));
    const start = messages[0]!.delta;
    expect(start.case === "start" && start.value.provider).toBe("fast");
    expect(textOf(messages)).toBe(simulatedText(9, 20));
    const [loser] = records("hedge-slow");
    // Its upstream request was aborted, not left to run for 60 s.
    const closed = await h.sim.records.waitFor((r) => r.id === loser!.id && r.endedAt !== undefined, 30_000);
    expect(closed.outcome).toBe("client_closed");
    expect(closed.tokensWritten).toBe(0);
    // The hedge came second, after the first attempt had had its chance.
    expect(records("hedge-fast")[0]!.arrivedAt).toBeGreaterThan(loser!.arrivedAt);
    const end = await h.waitForLog((l) => l.event === "stream.end" && Array.isArray(l.tried) && (l.tried as string[]).some((t) => t.includes("hedge-fast")));
    expect(end.tried).toEqual([expect.stringMatching(/hedge-fast committed \d+ms$/), expect.stringMatching(/hedge-slow lost_hedge (\d+)ms$/)]);
  });

  it("never more than two attempts in flight", async () => {
    const messages = await collect(client().streamChat(userRequest("all-slow", "hi")));
    expect(messages.at(-1)!.delta.case).toBe("finish");
    const started = ["all-slow-1", "all-slow-2", "all-slow-3"].flatMap(records);
    expect(started).toHaveLength(2);
  });

  it("an answer that comes before afterMs starts no hedge", async () => {
    await collect(client().streamChat(userRequest("unhedged-fast", "hi")));
    expect(records("unhedged")).toHaveLength(1);
  });
});
