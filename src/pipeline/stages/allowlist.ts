import { quotaHeaders } from "../../tenancy/quota-headers.js";
import { checkTagValues } from "../../tenancy/tags.js";
import type { Tenancy } from "../../tenancy/tenancy.js";
import type { Stage } from "../stage.js";

/**
 * Opens the key's charge (tenancy/tenant-charge.ts): the key's allowlist
 * is checked before the alias is looked up, so a key learns nothing of
 * aliases it may not use. The charge settles when the call ends, however
 * it ends; its admission (limits, budgets) is the `charge` stage's, once
 * the request is fitted. Tags are checked here, with or without tenancy.
 */
export function allowlistStage(tenancy: Pick<Tenancy, "charge"> | undefined): Stage {
  return {
    name: "allowlist",
    open(call) {
      const { ctx } = call;
      if (ctx.tags) checkTagValues(ctx.tags);
      if (!tenancy) return undefined;
      const charge = tenancy.charge(ctx.principal, {
        request: call.request,
        requestId: ctx.requestId,
        onQuota: (quota) => Object.assign(call.summary.headers, quotaHeaders(quota)),
        record: call.summary.record,
        ...(ctx.tags ? { tags: ctx.tags } : {}),
        ...(ctx.remote ? { remote: ctx.remote } : {}),
      });
      call.charge = charge;
      return { end: ({ failure }) => charge.end(call.meter, failure) };
    },
  };
}
