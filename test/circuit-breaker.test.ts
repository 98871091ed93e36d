import { Code } from "@connectrpc/connect";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { RetryInfoSchema } from "../gen/google/rpc/error_details_pb.js";
import { createBreaker, createBreakers } from "../src/resilience/circuit-breaker.js";
import { chatClient, transports, userRequest } from "./helpers/clients.js";
import { baseUrlFor, type Harness, startHarness } from "./helpers/harness.js";
import { rpcUntilError } from "./helpers/until-error.js";

describe("the breaker on its own (an injected clock)", () => {
  const config = { failures: 3, windowMs: 10_000, openMs: 5_000 };

  it("opens after `failures` failures within the window, then lets one probe through", () => {
    let now = 0;
    const breaker = createBreaker(config, () => now);
    for (let i = 0; i < 3; i++) breaker.permit()!.failure();
    expect(breaker.state()).toBe("open");
    expect(breaker.permit()).toBeUndefined();
    expect(breaker.retryInMs()).toBe(5_000);
    now = 5_000;
    expect(breaker.state()).toBe("half_open");
    const probe = breaker.permit()!;
    expect(breaker.permit()).toBeUndefined(); // one probe at a time
    probe.success();
    expect(breaker.state()).toBe("closed");
  });

  it("a failed probe opens it again for another openMs", () => {
    let now = 0;
    const breaker = createBreaker(config, () => now);
    for (let i = 0; i < 3; i++) breaker.permit()!.failure();
    now = 5_000;
    breaker.permit()!.failure();
    expect(breaker.state()).toBe("open");
    now = 9_999;
    expect(breaker.state()).toBe("open");
    now = 10_000;
    expect(breaker.state()).toBe("half_open");
  });

  it("failures older than the window, or with a success between them, do not add up", () => {
    let now = 0;
    const breaker = createBreaker(config, () => now);
    breaker.permit()!.failure();
    breaker.permit()!.failure();
    now = 10_000;
    breaker.permit()!.failure();
    expect(breaker.state()).toBe("closed");
    breaker.permit()!.failure();
    breaker.permit()!.success();
    breaker.permit()!.failure();
    expect(breaker.state()).toBe("closed");
  });

  it("an abandoned probe frees the probe slot without changing the state", () => {
    let now = 0;
    const breaker = createBreaker(config, () => now);
    for (let i = 0; i < 3; i++) breaker.permit()!.failure();
    now = 5_000;
    breaker.permit()!.abandon();
    expect(breaker.state()).toBe("half_open");
    expect(breaker.permit()).toBeDefined();
  });
});

describe("a breaker given new settings by a reload", () => {
  const config = { failures: 3, windowMs: 10_000, openMs: 5_000 };

  it("keeps the failures it counted and judges the next one by the new threshold", () => {
    const breaker = createBreaker(config, () => 0);
    breaker.permit()!.failure();
    breaker.permit()!.failure();
    breaker.configure({ ...config, failures: 5 });
    breaker.permit()!.failure();
    expect(breaker.state()).toBe("closed"); // 3 of 5 now
    breaker.configure({ ...config, failures: 4 });
    breaker.permit()!.failure();
    expect(breaker.state()).toBe("open"); // the fourth, with the three before it
  });

  it("an open breaker keeps its state and waits the new openMs from when it opened, reporting the change", () => {
    let now = 0;
    const changes: string[] = [];
    const breaker = createBreaker(
      config,
      () => now,
      (state) => changes.push(state),
    );
    for (let i = 0; i < 3; i++) breaker.permit()!.failure();
    now = 1_000;
    breaker.configure({ ...config, openMs: 60_000 });
    expect(breaker.state()).toBe("open");
    expect(breaker.retryInMs()).toBe(59_000);
    breaker.configure({ ...config, openMs: 1_000 });
    expect(breaker.state()).toBe("half_open");
    expect(changes).toEqual(["open", "half_open"]);
  });

  it("the set follows a new configuration by provider name, for breakers made before and after it", () => {
    const breakers = createBreakers(() => 0);
    const old = { name: "p", breaker: { failures: 1, windowMs: 10_000, openMs: 5_000 } };
    const existing = breakers.of({ key: "p/a", provider: old });
    breakers.configure(new Map([["p", { breaker: { failures: 2, windowMs: 10_000, openMs: 5_000 } }]]));
    // A request still on the old configuration makes the breaker of another target: it gets the new settings.
    const later = breakers.of({ key: "p/b", provider: old });
    for (const breaker of [existing, later]) {
      breaker.permit()!.failure();
      expect(breaker.state()).toBe("closed");
      breaker.permit()!.failure();
      expect(breaker.state()).toBe("open");
    }
    expect(breakers.of({ key: "p/a", provider: old })).toBe(existing);
  });
});

describe("breakers over real requests: open → skipped → half-open probe → closed", () => {
  let now = 0;
  let h: Harness;
  beforeAll(async () => {
    h = await startHarness({
      clock: () => now,
      routing: (sim) => ({
        providers: {
          flaky: { kind: "openai", baseUrl: baseUrlFor(sim, "openai"), breaker: { failures: 3, windowMs: 60_000, openMs: 5_000 } },
          steady: { kind: "gemini", baseUrl: baseUrlFor(sim, "gemini") },
        },
        models: {
          // Upstream requests 1-4 fail, then it recovers.
          alone: { provider: "flaky", model: "sim-1?fail=status&status=503&fail_first=4&script=alone" },
          paired: {
            targets: [
              { provider: "flaky", model: "sim-1?fail=status&status=500&script=paired" },
              { provider: "steady", model: "sim-1" },
            ],
          },
        },
      }),
    });
  });
  afterAll(() => h.close());

  const call = async (model: string) => {
    const { received: messages, error } = await rpcUntilError(chatClient(transports(h.url)["grpc (connect-node, h2)"]!).streamChat(userRequest(model, "hi")));
    return { messages, error };
  };
  const upstream = (script: string) => h.sim.records.all().filter((r) => r.model.includes(`script=${script}`)).length;

  it("a single target: three failures open it; the next request fails at once without reaching the provider", async () => {
    for (let i = 0; i < 3; i++) expect((await call("alone")).error?.code).toBe(Code.Unavailable);
    expect(upstream("alone")).toBe(3);
    const skipped = await call("alone");
    expect(skipped.error?.code).toBe(Code.Unavailable);
    expect(skipped.error?.rawMessage).toMatch(/circuit breakers are open/);
    expect(skipped.error?.findDetails(RetryInfoSchema)[0]?.retryDelay?.seconds).toBe(5n);
    expect(upstream("alone")).toBe(3);
  });

  it("after openMs one probe goes through; its failure opens the breaker again", async () => {
    now += 5_000;
    expect((await call("alone")).error?.code).toBe(Code.Unavailable);
    expect(upstream("alone")).toBe(4);
    expect((await call("alone")).error?.rawMessage).toMatch(/circuit breakers are open/);
    expect(upstream("alone")).toBe(4);
  });

  it("a successful probe closes it: traffic flows again", async () => {
    now += 5_000;
    expect((await call("alone")).messages?.at(-1)?.delta.case).toBe("finish");
    expect((await call("alone")).messages?.at(-1)?.delta.case).toBe("finish");
    expect(upstream("alone")).toBe(6);
  });

  it("with a second target, an open breaker is skipped and the other target serves at once", async () => {
    for (let i = 0; i < 3; i++) expect((await call("paired")).messages?.at(-1)?.delta.case).toBe("finish");
    expect(upstream("paired")).toBe(3); // each request failed over after one try
    const served = await call("paired");
    const start = served.messages![0]!.delta;
    expect(start.case === "start" && start.value.provider).toBe("steady");
    expect(upstream("paired")).toBe(3); // skipped: the open target was not tried
    expect(h.logs().some((l) => l.event === "breaker.changed" && l.target === "flaky/sim-1?fail=status&status=500&script=paired" && l.state === "open")).toBe(true);
  });
});
