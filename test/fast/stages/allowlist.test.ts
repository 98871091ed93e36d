import { describe, expect, it } from "vitest";
import { GatewayError } from "../../../src/core/errors.js";
import { allowlistStage } from "../../../src/pipeline/stages/allowlist.js";
import type { Principal } from "../../../src/tenancy/principal.js";
import type { Tenancy } from "../../../src/tenancy/tenancy.js";
import type { ChargeInput, TenantCharge } from "../../../src/tenancy/tenant-charge.js";
import { fakeCall, fakeCharge } from "../helpers/fake-call.js";

const KEY: Principal = { name: "team-a", id: "aaaaaaaaaaaa", sha256: "a".repeat(64), source: "config", limits: {} };

/** Tenancy that opens fake charges and keeps what each was opened with. */
function fakeTenancy() {
  const opened: Array<{ readonly principal: Principal | undefined; readonly input: Omit<ChargeInput, "principal"> }> = [];
  const charge = fakeCharge();
  const tenancy: Pick<Tenancy, "charge"> = {
    charge(principal, input): TenantCharge {
      opened.push({ principal, input });
      return charge;
    },
  };
  return { tenancy, opened, charge };
}

describe("allowlist stage", () => {
  it("opens the key's charge on the call, with the call's request, id, tags, remote and record facts", async () => {
    const { tenancy, opened, charge } = fakeTenancy();
    const { call } = fakeCall({ routed: false, ctx: { principal: KEY, requestId: "r2", tags: { team: "x" }, remote: "10.0.0.1" } });
    await allowlistStage(tenancy).open(call);
    expect(call.charge).toBe(charge);
    expect(opened).toHaveLength(1);
    expect(opened[0]).toMatchObject({ principal: KEY, input: { request: call.request, requestId: "r2", tags: { team: "x" }, remote: "10.0.0.1" } });
    // The usage record reads the facts later stages settle (a cache hit, personal data found, the context fit) from the summary itself.
    expect(opened[0]!.input.record).toBe(call.summary.record);
  });

  it("what is left of the key's limits goes into the summary's headers", async () => {
    const { tenancy, opened } = fakeTenancy();
    const { call } = fakeCall({ routed: false, ctx: { principal: KEY } });
    await allowlistStage(tenancy).open(call);
    opened[0]!.input.onQuota?.({ requests: { limit: 10, remaining: 9, resetMs: 1_000 } });
    expect(call.summary.headers).toMatchObject({ "x-ratelimit-limit-requests": "10", "x-ratelimit-remaining-requests": "9" });
  });

  it("the end settles the charge with the call's meter and its failure, or none", async () => {
    const { tenancy, charge } = fakeTenancy();
    const { call } = fakeCall({ routed: false });
    const part = await allowlistStage(tenancy).open(call);
    const failure = new GatewayError("upstream_unavailable", "down");
    part?.end?.({ failure });
    expect(charge.argsOf("end")).toEqual([[call.meter, failure]]);
    const second = fakeTenancy();
    const completed = fakeCall({ routed: false }).call;
    (await allowlistStage(second.tenancy).open(completed))?.end?.({});
    expect(second.charge.argsOf("end")).toEqual([[completed.meter, undefined]]);
  });

  it("a charge that refuses the key refuses the call", () => {
    const refusal = new GatewayError("permission_denied", "key team-a may not use model a");
    const tenancy: Pick<Tenancy, "charge"> = {
      charge: () => {
        throw refusal;
      },
    };
    expect(() => allowlistStage(tenancy).open(fakeCall({ routed: false }).call)).toThrow(refusal);
  });

  it("tags are checked with or without tenancy; without it there is no charge and no part", async () => {
    const { call } = fakeCall({ routed: false, ctx: { tags: { team: "x".repeat(300) } } });
    expect(() => allowlistStage(undefined).open(call)).toThrow(expect.objectContaining({ code: "invalid_request" }) as GatewayError);
    const untagged = fakeCall({ routed: false }).call;
    const charge = untagged.charge;
    expect(await allowlistStage(undefined).open(untagged)).toBeUndefined();
    expect(untagged.charge).toBe(charge);
  });
});
