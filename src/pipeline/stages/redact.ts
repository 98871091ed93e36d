import { NO_POLICY, policyFor } from "../../compliance/pii-policy.js";
import { restoringSink } from "../../compliance/restoring-sink.js";
import { SCREEN_IN_POOL_CHARS, type Screened, screeningIsLong, screenRequest, screenRequestPooled } from "../../compliance/screen-request.js";
import type { CallState, Stage, StagePart } from "../stage.js";

/**
 * Screens the prompt for personal data under the key's or alias's policy
 * (compliance/pii-policy.ts) and, under `redact`, puts placeholders in it
 * and restores them in the answer. First in the table: every stage after
 * it, telemetry included, sees only the screened prompt. What the policy
 * then decides (refuse, keep local) is the `compliance` stage's, once the
 * key's allowlist has passed.
 */
export function redactStage(): Stage {
  return {
    name: "redact",
    open(call) {
      const { config, routes, ctx, request } = call;
      const policy = policyFor(config, ctx.principal, routes.has(request.model) ? routes.lookup(request.model) : undefined);
      if (policy === NO_POLICY) return undefined;
      // Long texts are screened in the worker pool (or, without one, in slices, the event loop turning between them): other streams go on meanwhile.
      if (screeningIsLong(request, SCREEN_IN_POOL_CHARS)) return screenRequestPooled(request, policy, call.signal).then((screened) => screenedInto(call, screened));
      return screenedInto(call, screenRequest(request, policy));
    },
  };
}

/** The call as screened: its request, its cache key, and the restoring of the answer when something was redacted. */
function screenedInto(call: CallState, screened: Screened): StagePart | undefined {
  call.screened = screened;
  call.request = screened.request;
  call.cacheRequest = screened.cacheRequest;
  const { vault } = screened;
  if (!vault) return undefined;
  call.restored = true;
  return { wrap: (sink) => restoringSink(sink, vault) };
}
