import type { Quota } from "../store/tenant-store.js";

/**
 * A duration the way OpenAI writes its x-ratelimit-reset-* headers:
 * `250ms`, `1.5s`, `6m0s`; past an hour with hours, past a day with days
 * (`17h53m32s`, `6d23h0m0s`), so a budget's reset a month away reads as
 * one (it read `1073m32s`). Seconds past a minute are whole, rounded up:
 * the reset is never said to come before it does.
 */
export function resetDuration(ms: number): string {
  const whole = Math.max(0, Math.ceil(ms));
  if (whole < 1_000) return `${whole}ms`;
  if (whole < 60_000) return `${Number((whole / 1_000).toFixed(3))}s`;
  const seconds = Math.ceil(whole / 1_000);
  const days = Math.floor(seconds / 86_400);
  const hours = Math.floor((seconds % 86_400) / 3_600);
  const minutes = Math.floor((seconds % 3_600) / 60);
  const rest = `${minutes}m${seconds % 60}s`;
  if (days > 0) return `${days}d${hours}h${rest}`;
  return hours > 0 ? `${hours}h${rest}` : rest;
}

/** Micro-dollars as a decimal USD string, without a float: 1234567 → "1.234567". */
export function usdFromMicros(micros: number): string {
  const sign = micros < 0 ? "-" : "";
  const abs = Math.abs(Math.trunc(micros));
  const cents = String(abs % 1_000_000)
    .padStart(6, "0")
    .replace(/0+$/, "");
  return `${sign}${Math.floor(abs / 1_000_000)}${cents ? `.${cents}` : ""}`;
}

/**
 * What is left of a key's limits, as response headers (HTTP headers on the
 * facade, response metadata over gRPC): OpenAI's names for requests and
 * tokens, so clients that pace themselves by them work unchanged, and
 * Sluice's own for streams and the budget.
 */
export function quotaHeaders(quota: Quota): Record<string, string> {
  const h: Record<string, string> = {};
  if (quota.requests) {
    h["x-ratelimit-limit-requests"] = String(quota.requests.limit);
    h["x-ratelimit-remaining-requests"] = String(quota.requests.remaining);
    h["x-ratelimit-reset-requests"] = resetDuration(quota.requests.resetMs);
  }
  if (quota.tokens) {
    h["x-ratelimit-limit-tokens"] = String(quota.tokens.limit);
    h["x-ratelimit-remaining-tokens"] = String(quota.tokens.remaining);
    h["x-ratelimit-reset-tokens"] = resetDuration(quota.tokens.resetMs);
  }
  if (quota.streams) {
    h["sluice-ratelimit-limit-streams"] = String(quota.streams.limit);
    h["sluice-ratelimit-remaining-streams"] = String(Math.max(0, quota.streams.limit - quota.streams.inUse));
  }
  if (quota.budget) {
    h["sluice-budget-limit-usd"] = usdFromMicros(quota.budget.limitMicros);
    h["sluice-budget-remaining-usd"] = usdFromMicros(Math.max(0, quota.budget.limitMicros - quota.budget.usedMicros));
    h["sluice-budget-reset"] = resetDuration(quota.budget.resetMs);
  }
  return h;
}
