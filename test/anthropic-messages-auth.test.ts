import Anthropic from "@anthropic-ai/sdk";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { sha256Hex } from "../src/config/key-hash.js";
import { simulatedText } from "../src/simulator/text.js";
import { answerFromMessage, MESSAGES_MODES, messagesClient, messageVia, weatherRequest } from "./helpers/answer-via-messages.js";
import { type Harness, startHarness } from "./helpers/harness.js";
import { openSocket } from "./helpers/raw.js";

/** Virtual keys on the Messages edge, with the official SDK's two ways of sending one. */

const TEAM_A_KEY = "sk-test-msgs-team-a-6b1e0d9c2a7f4e38";
const TEAM_B_KEY = "sk-test-msgs-team-b-1f3d5b7a9c0e2d46";
const WRONG_KEY = "sk-test-msgs-nobody-00000000000000000";
const ONE_RPM_KEY = "sk-test-msgs-one-rpm-4c2a8e6f0b1d3a57";
const COUNTING_KEY = "sk-test-msgs-counting-8d0b2f4a6c1e3957";

let h: Harness;
beforeAll(async () => {
  h = await startHarness({
    models: { sim: "sim-1?tokens=3&seed=5", other: "sim-1?tokens=2" },
    env: { TEAM_A_KEY, ONE_RPM_KEY, COUNTING_KEY },
    auth: {
      keys: [
        { name: "team-a", keyEnv: "TEAM_A_KEY", models: ["sim"], limits: { requestsPerMinute: 1_000, tokensPerMinute: 1_000_000 } },
        { name: "team-b", sha256: sha256Hex(TEAM_B_KEY) },
        { name: "one-rpm", keyEnv: "ONE_RPM_KEY", limits: { requestsPerMinute: 1 } },
        { name: "counting", keyEnv: "COUNTING_KEY", limits: { requestsPerMinute: 1 } },
      ],
    },
  });
});
afterAll(() => h.close());

/**
 * `x-api-key` alone, as Anthropic's API documents it (curl, other clients).
 * This SDK version sends its `apiKey` as `Authorization: Bearer`, so the
 * header is set by hand and the SDK's own auth is off.
 */
const withApiKey = (key: string) => messagesClient(h.url, { apiKey: null, defaultHeaders: { "x-api-key": key } });
/** `Authorization: Bearer`: what the SDK sends for `apiKey` (and for `authToken`). */
const withBearer = (key: string) => messagesClient(h.url, { apiKey: key });

async function failureOf(call: Promise<unknown>): Promise<InstanceType<typeof Anthropic.APIError>> {
  return call.then(
    () => {
      throw new Error("expected the call to fail");
    },
    (e: unknown) => e as InstanceType<typeof Anthropic.APIError>,
  );
}

describe("a key in either header", () => {
  for (const [header, sdk] of [
    ["x-api-key", withApiKey],
    ["Authorization: Bearer", withBearer],
  ] as const) {
    for (const mode of MESSAGES_MODES) {
      it(`${header} is accepted (${mode})`, async () => {
        const message = await messageVia(sdk(TEAM_A_KEY), mode, weatherRequest("sim", "hi"));
        expect(answerFromMessage(message).text).toBe(simulatedText(5, 3));
      });
    }

    it(`${header}: an unknown key → AuthenticationError, 401 authentication_error`, async () => {
      for (const call of [() => sdk(WRONG_KEY).messages.create(weatherRequest("sim", "hi")), () => sdk(WRONG_KEY).messages.countTokens({ model: "sim", messages: [{ role: "user", content: "hi" }] })]) {
        const error = await failureOf(call());
        expect(error).toBeInstanceOf(Anthropic.AuthenticationError);
        expect(error).toMatchObject({ status: 401, type: "authentication_error" });
        expect(error.apiMessage).toBe("invalid API key");
      }
    });

    it(`${header}: a key not allowed on the alias → PermissionDeniedError, 403 permission_error, on messages and count_tokens`, async () => {
      for (const call of [() => sdk(TEAM_A_KEY).messages.create(weatherRequest("other", "hi")), () => sdk(TEAM_A_KEY).messages.countTokens({ model: "other", messages: [{ role: "user", content: "hi" }] })]) {
        const error = await failureOf(call());
        expect(error).toBeInstanceOf(Anthropic.PermissionDeniedError);
        expect(error).toMatchObject({ status: 403, type: "permission_error" });
        expect(error.apiMessage).toMatch(/key team-a may not use model "other"/);
      }
    });
  }

  it("a key configured by its hash only may use every alias", async () => {
    const message = await withApiKey(TEAM_B_KEY).messages.create(weatherRequest("other", "hi"));
    expect(answerFromMessage(message).text).toBe(simulatedText(1, 2));
  });

  it("no key at all → 401 authentication_error", async () => {
    const res = await fetch(`${h.url}/v1/messages`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(weatherRequest("sim", "hi")) });
    expect(res.status).toBe(401);
    expect(await res.json()).toMatchObject({ type: "error", error: { type: "authentication_error" } });
  });
});

describe("a refused key is answered before its body", () => {
  it("a 401 arrives while the declared body has not been sent", async () => {
    // A megabyte announced, not one byte of it sent: only a gateway that never waits for the body can answer.
    const socket = await openSocket(h.url);
    try {
      const answered = new Promise<string>((resolve) => {
        let text = "";
        socket.on("data", (chunk: Buffer) => {
          text += chunk.toString("latin1");
          if (text.includes("\r\n\r\n")) resolve(text);
        });
      });
      socket.write(`POST /v1/messages HTTP/1.1\r\nhost: gateway\r\ncontent-type: application/json\r\nx-api-key: ${WRONG_KEY}\r\ncontent-length: 1048576\r\n\r\n`);
      const head = await answered;
      expect(head).toMatch(/^HTTP\/1\.1 401 /);
      expect(head).toMatch(/\r\nrequest-id: req_/i);
    } finally {
      socket.destroy();
    }
  });
});

describe("quota headers", () => {
  it("a keyed answer carries x-ratelimit-* for the key's limits, whole and streamed", async () => {
    const sdk = withApiKey(TEAM_A_KEY);
    const whole = await sdk.messages.create(weatherRequest("sim", "hi")).withResponse();
    const streamed = await sdk.messages.create({ ...weatherRequest("sim", "hi"), stream: true }).withResponse();
    for await (const _ of streamed.data) {
      // drained: the stream ends cleanly
    }
    for (const { response } of [whole, streamed]) {
      expect(response.headers.get("x-ratelimit-limit-requests")).toBe("1000");
      expect(Number(response.headers.get("x-ratelimit-remaining-requests"))).toBeLessThan(1000);
      expect(response.headers.get("x-ratelimit-limit-tokens")).toBe("1000000");
      expect(response.headers.get("x-ratelimit-reset-requests")).toMatch(/^\d/);
    }
  });
});

describe("a key over its requests per minute", () => {
  it("counting tokens spends none of it", async () => {
    const sdk = withApiKey(COUNTING_KEY);
    for (let i = 0; i < 3; i++) expect((await sdk.messages.countTokens({ model: "sim", messages: [{ role: "user", content: "hi" }] })).input_tokens).toBeGreaterThan(0);
    const { response } = await sdk.messages.create(weatherRequest("sim", "hi")).withResponse();
    expect(response.headers.get("x-ratelimit-remaining-requests")).toBe("0");
  });

  it("→ RateLimitError, 429 rate_limit_error with Retry-After and the quota spent, streamed or not", async () => {
    const sdk = withApiKey(ONE_RPM_KEY);
    await sdk.messages.create(weatherRequest("sim", "hi"));
    for (const mode of MESSAGES_MODES) {
      const error = await failureOf(messageVia(sdk, mode, weatherRequest("sim", "hi")));
      expect(error).toBeInstanceOf(Anthropic.RateLimitError);
      expect(error).toMatchObject({ status: 429, type: "rate_limit_error" });
      expect(Number(error.headers?.get("retry-after"))).toBeGreaterThan(0);
      expect(error.headers?.get("x-ratelimit-remaining-requests")).toBe("0");
      expect(error.headers?.get("x-ratelimit-limit-requests")).toBe("1");
    }
  });
});

describe("no key leaks", () => {
  it("no key appears in any log line", () => {
    for (const key of [TEAM_A_KEY, TEAM_B_KEY, WRONG_KEY, ONE_RPM_KEY, COUNTING_KEY]) expect(h.logText()).not.toContain(key);
  });
});
