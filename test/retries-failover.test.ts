import { Code } from "@connectrpc/connect";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { RetryInfoSchema } from "../gen/google/rpc/error_details_pb.js";
import { simulatedText } from "../src/simulator/text.js";
import { answerViaGrpc } from "./helpers/answers.js";
import { chatClient, textOf, transports, userRequest } from "./helpers/clients.js";
import { baseUrlFor, type Harness, startHarness } from "./helpers/harness.js";
import { rpcUntilError } from "./helpers/until-error.js";

let h: Harness;
beforeAll(async () => {
  h = await startHarness({
    routing: (sim) => ({
      providers: {
        primary: { kind: "openai", baseUrl: baseUrlFor(sim, "openai"), breaker: { failures: 10_000 }, timeouts: { headersMs: 600 } },
        backup: { kind: "anthropic", baseUrl: baseUrlFor(sim, "anthropic"), breaker: { failures: 10_000 } },
      },
      models: {
        // The same target three times over, for retries on one target.
        flaky: { provider: "primary", model: "sim-1?seed=3&fail=status&status=503&fail_first=2&script=flaky", retry: { maxAttempts: 3, baseBackoffMs: 1, maxBackoffMs: 5 } },
        // Fails over across provider kinds.
        failover: {
          targets: [
            { provider: "primary", model: "sim-1?seed=5&tools=2&fail=status&status=503&script=failover" },
            { provider: "backup", model: "sim-1?seed=5&tools=2" },
          ],
        },
        "backup-only": { provider: "backup", model: "sim-1?seed=5&tools=2" },
        // Fails after its first deltas: must never be retried.
        midstream: { provider: "primary", model: "sim-1?fail=drop&fail_at=3&script=midstream", retry: { maxAttempts: 3, baseBackoffMs: 1 } },
        // Never sends headers: each attempt ends at the 600 ms headers timeout.
        silent: { provider: "primary", model: "sim-1?headers_ms=60000&script=silent", retry: { maxAttempts: 3, baseBackoffMs: 1 } },
        // 429 with Retry-After: 1 (second) once, then fine.
        limited: { provider: "primary", model: "sim-1?fail=status&status=429&retry_after=1&fail_first=1&script=limited", retry: { maxAttempts: 2, baseBackoffMs: 1 } },
        // 429 with Retry-After: 60 once: longer than any deadline a test gives.
        "limited-long": { provider: "primary", model: "sim-1?fail=status&status=429&retry_after=60&fail_first=1&script=limited-long", retry: { maxAttempts: 2, baseBackoffMs: 1 } },
        // 400: the request's fault, never retried.
        rejected: { provider: "primary", model: "sim-1?fail=status&status=400&script=rejected", retry: { maxAttempts: 3, baseBackoffMs: 1 } },
        // Every attempt fails: the error lists them.
        broken: {
          targets: [
            { provider: "primary", model: "sim-1?fail=status&status=503&script=broken-a" },
            { provider: "backup", model: "sim-1?fail=status&status=502&script=broken-b" },
          ],
        },
      },
    }),
  });
});
afterAll(() => h.close());

const client = () => chatClient(transports(h.url)["grpc (connect-node, h2)"]!);
const requestsFor = (model: string) => h.sim.records.all().filter((r) => r.model.includes(`script=${model}`));

async function outcome(model: string, text = "hi", timeoutMs?: number) {
  const { received: messages, error } = await rpcUntilError(client().streamChat(userRequest(model, text), timeoutMs ? { timeoutMs } : {}));
  return { messages, error };
}

describe("retries before the first delta", () => {
  it("two 503s, then success: the client sees only the answer", async () => {
    const { messages, error } = await outcome("flaky");
    expect(error).toBeUndefined();
    expect(textOf(messages)).toBe(simulatedText(3, 20));
    expect(requestsFor("flaky").map((r) => r.outcome)).toEqual(["failed", "failed", "completed"]);
  });

  it("never after the first delta: a stream cut mid-way is the client's error, and the upstream saw one request", async () => {
    const { messages, error } = await outcome("midstream");
    expect(error?.code).toBe(Code.Unavailable);
    // The three tokens before the drop, in however many messages (the edge joins text that arrived together).
    expect(textOf(messages)).toBe(simulatedText(1, 3));
    expect(messages.some((m) => m.delta.case === "finish")).toBe(false);
    expect(requestsFor("midstream")).toHaveLength(1);
  });

  it("a 400 from the provider is never retried", async () => {
    const { error } = await outcome("rejected");
    expect(error?.code).toBe(Code.InvalidArgument);
    expect(requestsFor("rejected")).toHaveLength(1);
  });

  it("a 429 is retried no sooner than its Retry-After", async () => {
    const { messages, error } = await outcome("limited");
    expect(error).toBeUndefined();
    expect(messages.at(-1)!.delta.case).toBe("finish");
    const [first, second] = requestsFor("limited");
    expect(second!.arrivedAt - first!.endedAt!).toBeGreaterThanOrEqual(1000 - 5);
  });

  it("a Retry-After longer than the client's deadline allows is not waited for", async () => {
    // A deadline of 20 s against a Retry-After of 60 s: a slow machine cannot turn the refusal into a deadline.
    const { error } = await outcome("limited-long", "#sim tag=limited-long", 20_000);
    // Refused at once with the provider's own status, not left to run into the deadline.
    expect(error?.code).toBe(Code.ResourceExhausted);
    expect(error?.findDetails(RetryInfoSchema)[0]?.retryDelay?.seconds).toBe(60n);
    expect(h.sim.records.all().filter((r) => r.tag === "limited-long")).toHaveLength(1);
  });
});

describe("the client's deadline is the budget for all attempts", () => {
  it("no second attempt starts without room for its headers timeout", async () => {
    // Attempt 1 ends at the 600 ms headers timeout: at most 400 ms are left, less than another 600.
    const { error } = await outcome("silent", "#sim tag=silent-short", 1000);
    expect(error).toBeDefined();
    await h.sim.records.waitFor((r) => r.tag === "silent-short" && r.endedAt !== undefined, 30_000);
    expect(h.sim.records.all().filter((r) => r.tag === "silent-short")).toHaveLength(1);
  });

  it("with room, it does retry", async () => {
    const { error } = await outcome("silent", "#sim tag=silent-long", 10_000);
    expect(error?.code).toBe(Code.Unavailable);
    expect(error?.rawMessage).toMatch(/^all 3 attempts failed: .*headers timeout/);
    expect(h.sim.records.all().filter((r) => r.tag === "silent-long")).toHaveLength(3);
  });
});

describe("failover across provider kinds", () => {
  it("is invisible to the client except in start: the same deltas as the backup alone", async () => {
    const viaFailover = await answerViaGrpc(h.url, "failover", "hi");
    const direct = await answerViaGrpc(h.url, "backup-only", "hi");
    expect(viaFailover).toEqual(direct);
    const { messages } = await outcome("failover");
    const start = messages[0]!.delta;
    expect(start.case === "start" && start.value.provider).toBe("backup");
    expect(start.case === "start" && start.value.model).toBe("sim-1?seed=5&tools=2");
  });

  it("when every attempt fails, one error lists each attempt, with no key", async () => {
    const { error } = await outcome("broken");
    expect(error?.code).toBe(Code.Unavailable);
    expect(error?.rawMessage).toMatch(/^all 2 attempts failed: primary\/sim-1\?fail=status&status=503&script=broken-a: provider primary failed \(status 503\) \(\d+ ms\); backup\/.*provider backup failed \(status 502\)/);
  });
});
