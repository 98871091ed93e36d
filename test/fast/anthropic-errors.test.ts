import Anthropic from "@anthropic-ai/sdk";
import { describe, expect, it } from "vitest";
import { type ErrorCode, GatewayError } from "../../src/core/errors.js";
import { type AnthropicErrorType, anthropicStatus, toAnthropicError } from "../../src/edges/anthropic/anthropic-errors.js";

/** Every code (the Record type makes a missing one a compile error) with the status and type Anthropic's table gives it. */
const TABLE: Record<ErrorCode, readonly [number, AnthropicErrorType, "no retry"?]> = {
  invalid_request: [400, "invalid_request_error"],
  upstream_rejected: [400, "invalid_request_error"],
  failed_precondition: [400, "invalid_request_error"],
  unauthenticated: [401, "authentication_error"],
  permission_denied: [403, "permission_error"],
  unknown_model: [404, "not_found_error"],
  upstream_not_found: [404, "not_found_error"],
  not_found: [404, "not_found_error"],
  request_timeout: [408, "invalid_request_error"],
  already_exists: [409, "conflict_error", "no retry"],
  not_resumable: [409, "conflict_error", "no retry"],
  payload_too_large: [413, "request_too_large"],
  upstream_rate_limited: [429, "rate_limit_error"],
  rate_limited: [429, "rate_limit_error"],
  budget_exceeded: [402, "billing_error"],
  upstream_quota_exhausted: [429, "rate_limit_error", "no retry"],
  canceled: [499, "invalid_request_error"],
  internal: [500, "api_error"],
  upstream_auth: [502, "api_error"],
  upstream_unavailable: [502, "api_error"],
  upstream_protocol: [502, "api_error"],
  upstream_stream_error: [502, "api_error"],
  shutting_down: [503, "api_error"],
  circuit_open: [503, "api_error"],
  store_unavailable: [503, "api_error"],
  deadline_exceeded: [504, "timeout_error"],
  upstream_timeout: [504, "timeout_error"],
  overloaded: [529, "overloaded_error"],
};

describe("gateway error → Anthropic status and error type", () => {
  it.each(Object.entries(TABLE))("%s → %j", (code, [status, type, retry]) => {
    expect(anthropicStatus(code as ErrorCode)).toEqual({ status, type, ...(retry ? { retry: false } : {}) });
    const { headers } = toAnthropicError(new GatewayError(code as ErrorCode, "x"));
    expect(headers["x-should-retry"]).toBe(retry ? "false" : undefined);
  });
});

describe("the error body", () => {
  it("is Anthropic's shape, with the request id when given", () => {
    expect(toAnthropicError(new GatewayError("overloaded", "provider queue full"), "req_1")).toEqual({
      status: 529,
      headers: {},
      body: { type: "error", error: { type: "overloaded_error", message: "provider queue full" }, request_id: "req_1" },
    });
  });

  it("names canonical fields the Anthropic way", () => {
    const message = "reasoning.budget_tokens, sampling.top_k: not supported by provider gpt (openai); remove them, or set dropUnsupportedParams on the model alias";
    const { body } = toAnthropicError(new GatewayError("invalid_request", message, { field: "reasoning.budget_tokens" }));
    expect(body.error.message).toBe("thinking.budget_tokens, top_k: not supported by provider gpt (openai); remove them, or set dropUnsupportedParams on the model alias");
    const schema = toAnthropicError(new GatewayError("invalid_request", "tools[2].parameters: JSON Schema nested deeper than 8 levels", { field: "tools[2].parameters" }));
    expect(schema.body.error.message).toBe("tools[2].input_schema: JSON Schema nested deeper than 8 levels");
  });

  it("never shows what an unknown error says", () => {
    const { status, body } = toAnthropicError(new Error("ECONNREFUSED 10.0.0.7:443 key=sk-secret"));
    expect(status).toBe(500);
    expect(JSON.stringify(body)).not.toContain("secret");
    expect(body.error).toEqual({ type: "api_error", message: "internal error" });
  });

  it("keeps Retry-After in seconds and milliseconds", () => {
    const { headers } = toAnthropicError(new GatewayError("rate_limited", "slow down", { retryAfterMs: 1500 }));
    expect(headers).toEqual({ "retry-after": "2", "retry-after-ms": "1500" });
  });
});

/** The official SDK over an in-memory fetch that answers every request with `error`; counts the requests. */
async function throughSdk(error: GatewayError, maxRetries: number): Promise<{ thrown: unknown; requests: number }> {
  let requests = 0;
  const client = new Anthropic({
    apiKey: "k",
    baseURL: "http://sluice.test",
    maxRetries,
    fetch: async () => {
      requests++;
      const { status, headers, body } = toAnthropicError(error, "req_7");
      return new Response(JSON.stringify(body), { status, headers: { ...headers, "content-type": "application/json", "request-id": "req_7" } });
    },
  });
  const thrown = await client.messages.create({ model: "m", max_tokens: 5, messages: [{ role: "user", content: "hi" }] }).catch((e: unknown) => e);
  return { thrown, requests };
}

describe("what @anthropic-ai/sdk makes of it", () => {
  it.each([
    ["invalid_request", Anthropic.BadRequestError],
    ["unauthenticated", Anthropic.AuthenticationError],
    ["unknown_model", Anthropic.NotFoundError],
    ["payload_too_large", Anthropic.ContentTooLargeError],
    ["rate_limited", Anthropic.RateLimitError],
    ["upstream_unavailable", Anthropic.InternalServerError],
    ["overloaded", Anthropic.OverloadedError],
  ] as const)("%s raises its error class with the type and message", async (code, errorClass) => {
    const { thrown } = await throughSdk(new GatewayError(code, "what happened"), 0);
    expect(thrown).toBeInstanceOf(errorClass);
    expect(thrown).toMatchObject({ status: anthropicStatus(code).status, type: anthropicStatus(code).type, apiMessage: "what happened", requestID: "req_7" });
  });

  it("retries a rate limit after the Retry-After it was given", async () => {
    const { thrown, requests } = await throughSdk(new GatewayError("rate_limited", "slow down", { retryAfterMs: 1 }), 2);
    expect(thrown).toBeInstanceOf(Anthropic.RateLimitError);
    expect(requests).toBe(3);
  });

  it("does not retry a spent budget, however far its Retry-After: 402 billing_error naming the level", async () => {
    const spent = new GatewayError("budget_exceeded", "key k spent its budget", { retryAfterMs: 3 * 86_400_000, budget: { level: "team", httpStatus: 402 } });
    expect(toAnthropicError(spent).headers["sluice-budget-level"]).toBe("team");
    const { thrown, requests } = await throughSdk(spent, 2);
    expect(thrown).toBeInstanceOf(Anthropic.APIError);
    expect(thrown).toMatchObject({ status: 402, type: "billing_error" });
    expect(requests).toBe(1);
  });

  it("with auth.budgetExceededStatus 429, a spent budget is the rate limit of old, still not retried", async () => {
    const spent = new GatewayError("budget_exceeded", "key k spent its budget", { retryAfterMs: 3 * 86_400_000, budget: { level: "key", httpStatus: 429 } });
    expect(toAnthropicError(spent)).toMatchObject({ status: 429, headers: { "x-should-retry": "false", "sluice-budget-level": "key" }, body: { error: { type: "rate_limit_error" } } });
    const { thrown, requests } = await throughSdk(spent, 2);
    expect(thrown).toBeInstanceOf(Anthropic.RateLimitError);
    expect(requests).toBe(1);
  });
});
