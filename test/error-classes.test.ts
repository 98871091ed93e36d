import { Code, ConnectError } from "@connectrpc/connect";
import OpenAI from "openai";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { chatClient, collect, transports, userRequest } from "./helpers/clients.js";
import { type Harness, PROVIDER_KINDS, startHarness } from "./helpers/harness.js";

/** In-band error classes, and what each edge must say for them. Gemini has one class for rate and quota. */
const CLASSES = [
  { inband: "rate_limit", grpc: Code.ResourceExhausted, http: 429, code: "rate_limit_exceeded" },
  { inband: "quota", grpc: Code.ResourceExhausted, http: 429, code: "insufficient_quota" },
  { inband: "auth", grpc: Code.Internal, http: 502, code: "upstream_auth" },
  { inband: "server", grpc: Code.Unavailable, http: 502, code: "upstream_stream_error" },
] as const;

describe.each([...PROVIDER_KINDS, "openai-responses" as const])("in-band errors from %s map by their class", (kind) => {
  let h: Harness;
  beforeAll(async () => {
    h = await startHarness({ kind });
  });
  afterAll(() => h.close());

  for (const c of CLASSES) {
    it(`${c.inband} → ${Code[c.grpc]} / ${c.http}`, async () => {
      const prompt = `#sim fail=error_event fail_at=0 inband=${c.inband}`;
      const error = await collect(chatClient(transports(h.url)["grpc (connect-node, h2)"]!).streamChat(userRequest("sim", prompt))).then(
        () => undefined,
        (e: unknown) => ConnectError.from(e),
      );
      expect(error?.code).toBe(c.grpc);

      const openai = new OpenAI({ baseURL: `${h.url}/v1`, apiKey: "unused", maxRetries: 0 });
      const failure = await openai.chat.completions.create({ model: "sim", messages: [{ role: "user", content: prompt }] }).then(
        () => undefined,
        (e: unknown) => e as InstanceType<typeof OpenAI.APIError>,
      );
      expect(failure?.status).toBe(c.http);
      // Gemini reports quota exhaustion as RESOURCE_EXHAUSTED, the same class as a rate limit.
      expect(failure?.code).toBe(kind === "gemini" && c.inband === "quota" ? "rate_limit_exceeded" : c.code);
    });
  }

  it("an upstream 429 status reaches the SDK as RateLimitError with OpenAI's code", async () => {
    const openai = new OpenAI({ baseURL: `${h.url}/v1`, apiKey: "unused", maxRetries: 0 });
    const error = await openai.chat.completions.create({ model: "sim", messages: [{ role: "user", content: "#sim fail=status status=429" }] }).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(OpenAI.RateLimitError);
    expect((error as InstanceType<typeof OpenAI.RateLimitError>).code).toBe("rate_limit_exceeded");
  });
});
