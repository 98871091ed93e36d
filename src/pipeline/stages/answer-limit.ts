import { createOutputGuard, outputLimits } from "../output-guard.js";
import { routeOf, type Stage } from "../stage.js";
import type { StreamCut } from "../stream-cut.js";

/**
 * Holds the answer to what its request reserved (docs/tenancy.md,
 * "Enforcing what was reserved"): past its max_tokens, or past what the
 * key's budget can pay, the upstream is stopped, what was delivered is
 * counted and charged, and the client sees finish `length`. Told to
 * `onCut` (the audit log) and the access line.
 */
export function answerLimitStage(onCut: ((cut: StreamCut) => void) | undefined): Stage {
  return {
    name: "answer-limit",
    open(call) {
      const route = routeOf(call);
      return {
        guard(target) {
          const guard = createOutputGuard(outputLimits(call.request, target, call.charge.allowance()));
          if (!guard) return undefined;
          return (delta) => {
            const passed = guard.tap(delta);
            if (!passed) return undefined;
            const { ctx } = call;
            onCut?.({ requestId: ctx.requestId, alias: route.alias, ...(ctx.principal ? { key: { id: ctx.principal.id, name: ctx.principal.name } } : {}), ...(ctx.remote ? { remote: ctx.remote } : {}), target: target.key, ...passed });
            call.summary.facts.cut = passed.reason;
            return { reason: passed.reason, finish: "length" };
          };
        },
      };
    },
  };
}
