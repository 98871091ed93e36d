import { describe, expect, it } from "vitest";
import { type ErrorCode, GatewayError } from "../src/core/errors.js";
import { backoffMs, classify } from "../src/resilience/retry-policy.js";

describe("retry policy", () => {
  const retry = { maxAttempts: 5, baseBackoffMs: 100, maxBackoffMs: 2000 };

  it("full jitter: a random delay up to base × 2^(tries-1), capped", () => {
    expect(backoffMs(1, retry, () => 0.999)).toBe(99);
    expect(backoffMs(3, retry, () => 0.5)).toBe(200);
    expect(backoffMs(10, retry, () => 0.999)).toBe(1998);
    expect(backoffMs(4, retry, () => 0)).toBe(0);
  });

  const cases: Array<[ErrorCode, string, boolean]> = [
    ["upstream_rejected", "fatal", false],
    ["invalid_request", "fatal", false],
    ["canceled", "fatal", false],
    ["deadline_exceeded", "fatal", false],
    ["upstream_auth", "next", true],
    ["upstream_not_found", "next", true],
    ["overloaded", "next", false],
    ["upstream_rate_limited", "retry", true],
    ["upstream_unavailable", "retry", true],
    ["upstream_timeout", "retry", true],
    ["upstream_protocol", "retry", true],
    ["upstream_stream_error", "retry", true],
  ];
  for (const [code, kind, breaker] of cases) {
    it(`${code}: ${kind}${breaker ? ", counts against the breaker" : ""}`, () => {
      expect(classify(new GatewayError(code, "x"))).toEqual({ kind, breaker });
    });
  }
});
