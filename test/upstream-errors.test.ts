import { createServer } from "node:net";
import { Code } from "@connectrpc/connect";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { AZURE_SIM_KEY } from "../src/simulator/azure-wire.js";
import { simulatedText } from "../src/simulator/text.js";
import { type ChatClient, chatClient, textOf, transports, userRequest } from "./helpers/clients.js";
import { FAR_TIMEOUTS, type Harness, type ProviderKind, startHarness, WIRE_KINDS } from "./helpers/harness.js";
import { rpcUntilError } from "./helpers/until-error.js";

/** The key each kind's simulated provider is given; a kind whose simulator checks the key keeps the one it accepts. */
const SECRETS: Partial<Record<ProviderKind, string>> = { "azure-openai": AZURE_SIM_KEY };
const DEFAULT_SECRET = "sk-live-0123456789abcdefSECRET";

describe.each(WIRE_KINDS)("%s upstream", (kind) => {
  const SECRET = SECRETS[kind] ?? DEFAULT_SECRET;
  let h: Harness;
  let client: ChatClient;
  beforeAll(async () => {
    h = await startHarness({
      kind,
      models: { sim: "sim-1?seed=3" },
      provider: { apiKeyEnv: "SIM_KEY" },
      env: { SIM_KEY: SECRET },
      limits: { maxEventBytes: 64 * 1024 },
    });
    client = chatClient(transports(h.url)["grpc (connect-node, h2)"]!);
  });
  afterAll(() => h.close());

  /** Streams, returning what arrived before the error and the error itself. */
  function streamUntilError(c: ChatClient, text: string, model = "sim") {
    return rpcUntilError(c.streamChat(userRequest(model, text)));
  }

  const STATUS_TABLE: Array<[number, Code]> = [
    [400, Code.InvalidArgument],
    [401, Code.Internal],
    [403, Code.Internal],
    [404, Code.NotFound],
    [408, Code.Unavailable],
    [413, Code.InvalidArgument],
    [422, Code.InvalidArgument],
    [429, Code.ResourceExhausted],
    [500, Code.Unavailable],
    [502, Code.Unavailable],
    [503, Code.Unavailable],
    [504, Code.Unavailable],
    [529, Code.Unavailable],
  ];

  describe("upstream HTTP statuses map to the documented gRPC codes", () => {
    for (const [status, code] of STATUS_TABLE) {
      it(`${status} → ${Code[code]}`, async () => {
        const { received, error } = await streamUntilError(client, `#sim fail=status status=${status}`);
        expect(received).toEqual([]);
        expect(error?.code).toBe(code);
        expect(error?.rawMessage).toContain("provider simulator");
        expect(error?.rawMessage).toContain(String(status));
        expect(error?.rawMessage).not.toContain(SECRET);
      });
    }

    it("relays Retry-After on 429 as trailer metadata", async () => {
      const { error } = await streamUntilError(client, "#sim fail=status status=429 retry_after=7");
      expect(error?.code).toBe(Code.ResourceExhausted);
      expect(error?.metadata.get("retry-after")).toBe("7");
    });

    it("relays the provider's message for client faults, with anything key-shaped removed", async () => {
      const { error } = await streamUntilError(client, "#sim fail=status status=400");
      expect(error?.rawMessage).toBe("provider simulator rejected the request (status 400): simulated status 400");
    });
  });

  describe("connection failures", () => {
    it("refused connection → UNAVAILABLE naming the provider", async () => {
      const port = await new Promise<number>((resolve) => {
        const s = createServer().listen(0, "127.0.0.1", () => {
          const p = (s.address() as { port: number }).port;
          s.close(() => resolve(p));
        });
      });
      const dead = await startHarness({ kind, provider: { baseUrl: `http://127.0.0.1:${port}/v1` } });
      try {
        const { error } = await streamUntilError(chatClient(transports(dead.url)["grpc (connect-node, h2)"]!), "hi");
        expect(error?.code).toBe(Code.Unavailable);
        expect(error?.rawMessage).toBe("cannot reach provider simulator");
      } finally {
        await dead.close();
      }
    });

    it("reset before response headers → UNAVAILABLE", async () => {
      const { received, error } = await streamUntilError(client, "#sim fail=reset_before_headers");
      expect(received).toEqual([]);
      expect(error?.code).toBe(Code.Unavailable);
    });
  });

  describe("mid-stream failures deliver what was produced, then an error status", () => {
    const cases: Array<[string, Code, RegExp]> = [
      ["drop", Code.Unavailable, /closed the connection mid-stream/],
      ["malformed", Code.Internal, /malformed event/],
      ["oversized", Code.Internal, /^provider simulator sent an event larger than the maximum event size of 65536 bytes/],
      ["error_event", Code.Unavailable, /reported an error mid-stream/],
    ];
    for (const [fail, code, message] of cases) {
      for (const transport of ["grpc (connect-node, h2)", "connect (connect-node, HTTP/1.1)"]) {
        it(`${fail} over ${transport}`, async () => {
          const c = chatClient(transports(h.url)[transport]!);
          const { received, error } = await streamUntilError(c, `#sim fail=${fail} fail_at=4 tokens=10`);
          expect(received[0]?.delta.case).toBe("start");
          expect(textOf(received)).toBe(simulatedText(3, 4));
          expect(received.some((m) => m.delta.case === "finish")).toBe(false);
          expect(error?.code).toBe(code);
          expect(error?.rawMessage).toMatch(message);
        });
      }
    }
  });

  it("a TCP reset mid-stream ends with UNAVAILABLE, never a clean finish", async () => {
    const { received, error } = await streamUntilError(client, "#sim fail=reset fail_at=4 tokens=10");
    expect(received.some((m) => m.delta.case === "finish")).toBe(false);
    expect(error?.code).toBe(Code.Unavailable);
  });

  describe("secrets", () => {
    it("never appear in logs", () => {
      expect(h.logText().length).toBeGreaterThan(1000);
      expect(h.logText()).not.toContain(SECRET);
    });
  });

  describe("phase timeouts", () => {
    let t: Harness;
    beforeAll(async () => {
      // One short timeout per alias: with both on one provider, headers that
      // took over 150 ms on a loaded machine turned the idle case into a
      // headers timeout.
      t = await startHarness({
        kind,
        models: {
          headers: { model: "sim-1", timeouts: { ...FAR_TIMEOUTS, headersMs: 150 } },
          idle: { model: "sim-1", timeouts: { ...FAR_TIMEOUTS, idleMs: 150 } },
        },
      });
    });
    afterAll(() => t.close());

    it("no response headers in time → UNAVAILABLE naming the phase", async () => {
      const c = chatClient(transports(t.url)["grpc (connect-node, h2)"]!);
      const { error } = await streamUntilError(c, "#sim headers_ms=600000", "headers");
      expect(error?.code).toBe(Code.Unavailable);
      expect(error?.rawMessage).toBe("headers timeout: provider simulator sent no response headers within 150 ms");
    });

    it("silence mid-stream → UNAVAILABLE naming the idle phase, after the deltas already sent", async () => {
      const c = chatClient(transports(t.url)["grpc (connect-node, h2)"]!);
      const { received, error } = await streamUntilError(c, "#sim fail=stall fail_at=2", "idle");
      expect(textOf(received)).toBe(simulatedText(1, 2));
      expect(error?.code).toBe(Code.Unavailable);
      expect(error?.rawMessage).toBe("idle timeout: provider simulator sent nothing for 150 ms");
    });
  });
});
