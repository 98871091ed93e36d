import { describe, expect, it } from "vitest";
import type { ModelRoute } from "../../src/config/config.js";
import type { GatewayError } from "../../src/core/errors.js";
import type { AdmitResult, TenantStore } from "../../src/store/tenant-store.js";
import type { Principal } from "../../src/tenancy/principal.js";
import { openCharge } from "../../src/tenancy/tenant-charge.js";
import { request } from "../helpers/in-memory-gateway.js";

/**
 * What a budget refusal says, level by level: spent, held by streams in
 * flight, or too little left; a level above the key without figures, the
 * key with its own, and a refusal on a replica's fallback share as one.
 */

const DAY_MS = 86_400_000;
const principal: Principal = { source: "config", id: "k-id", name: "k", sha256: "a".repeat(64), team: "crew", limits: {}, budget: { usdMicros: 1_000_000, period: "month" } };
const hierarchy = { team: (name: string) => (name === "crew" ? { id: "crew-id", name, limits: {}, budget: { usdMicros: 1_000, period: "month" as const } } : undefined), businessLine: () => undefined };

async function refusal(result: AdmitResult, reserve = 400): Promise<GatewayError> {
  const store = { admit: async () => result } as unknown as TenantStore;
  // One output token at `reserve` micro-dollars, input free: the request reserves exactly `reserve`.
  const priced = { alias: "m", targets: [{ key: "p/m", timeouts: { totalMs: 1_000 }, price: { inputPerMTok: 0, outputPerMTok: reserve } }] } as unknown as ModelRoute;
  const charge = openCharge({ store, settled: () => undefined, budgetExceededStatus: 402, hierarchy }, { principal, request: request("m", "hi", 1), requestId: "r" });
  return charge.admit(priced).then(
    () => {
      throw new Error("admitted");
    },
    (e: GatewayError) => e,
  );
}

const team = (usedMicros: number, reservedMicros: number): AdmitResult => ({ ok: false, reason: "budget", level: "team", retryAfterMs: DAY_MS, quota: {}, levelBudget: { usedMicros, reservedMicros } });

describe("a budget refusal's words", () => {
  it("at a team: spent, held by streams in flight, or too little left, and never a figure", async () => {
    const spent = await refusal(team(1_000, 0));
    const held = await refusal(team(900, 700));
    const heldOnly = await refusal(team(700, 700));
    const little = await refusal(team(900, 100));
    expect(spent.message).toMatch(/^team crew has spent its budget for this month \(it renews in /);
    expect(held.message).toMatch(/^team crew has no room left in its budget for this month: part of it is spent and streams in flight hold what this request would need/);
    expect(heldOnly.message).toMatch(/^team crew has no room left in its budget for this month: streams in flight hold what this request would need/);
    expect(little.message).toMatch(/^team crew has too little of its budget for this month left for this request; lower max_tokens/);
    for (const e of [spent, held, heldOnly, little]) {
      expect(e.code).toBe("budget_exceeded");
      expect(e.message.replace(/renews in [^)]*/, "")).not.toMatch(/\d/);
    }
  });

  it("at the key: its own figures, and a refusal on this replica's fallback share says it is one", async () => {
    const quota = { budget: { limitMicros: 250, usedMicros: 200, reservedMicros: 100, resetMs: DAY_MS } };
    const shared = await refusal({ ok: false, reason: "budget", retryAfterMs: DAY_MS, quota, levelBudget: { usedMicros: 900_000, reservedMicros: 0 } });
    expect(shared.message).toMatch(/^key k cannot reserve 0\.0004 USD for this request: it has spent 0\.9 USD of its budget of 1 USD for this month, and no stream in flight holds any of it \(it renews in /);
    const local = await refusal({ ok: false, reason: "budget", retryAfterMs: DAY_MS, quota, local: true });
    expect(local.message).toMatch(
      /^key k cannot reserve 0\.0004 USD for this request: the shared store is unreachable, and this replica's share of what is left of its budget for this month, 0\.00025 USD, is used: 0\.0001 USD spent here and 0\.0001 USD held by streams in flight here/,
    );
  });
});
