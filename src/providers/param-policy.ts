import { type CarriedParam, carriedParamsDroppedBy, withoutCarried } from "../core/carried-params.js";
import type { ChatRequest } from "../core/chat-request.js";
import { GatewayError } from "../core/errors.js";
import { type OptionalParam, withoutParams } from "../core/request-params.js";
import { type HostedToolsPolicy, prepareHostedTools } from "./hosted-tools.js";
import type { ProviderAdapter, UpstreamTarget } from "./provider.js";

export interface PreparedRequest {
  /** What may be sent to this target. */
  readonly request: ChatRequest;
  /** What was removed because the target cannot honour it or has no place for it (empty: nothing): optional parameters, carried fields, hosted tools (`tools.web_search`) and their items. */
  readonly droppedParams: readonly DroppedParam[];
}

/** A parameter left out for one target: one it cannot honour (dropped by the alias's choice) or a carried one it has no place for (always). */
/** A name in `sluice-dropped-params`: an optional parameter, a carried field, or a hosted tool or item (`tools.web_search`). */
export type DroppedParam = OptionalParam | CarriedParam | (string & {});

/**
 * Unsupported parameters dropped and named whatever the alias says, as
 * carried fields are (issue 44 §1): `strict` on a function tool asks for
 * arguments that keep to the schema, which every target is already asked
 * for by the schema itself; a target without the flag (Gemini) gets the
 * tool without it rather than a 400 every agent SDK that sets it (the
 * OpenAI Agents SDK does, on every tool) would hit. Gemini's nearest
 * switch, function-calling mode `VALIDATED`, is a preview that changes
 * the tool choice for every tool, not a per-tool flag: not used for it.
 */
const OFFERS: ReadonlySet<OptionalParam> = new Set<OptionalParam>(["tools.strict"]);

/**
 * The unsupported-parameter rule, applied once per upstream attempt: a
 * parameter the target cannot honour is never dropped silently. By default
 * the request fails with INVALID_ARGUMENT naming the parameters and the
 * provider; an alias with `dropUnsupportedParams` sends the request without
 * them and the edges report what was dropped. OFFERS and carried fields
 * (carried-params.ts) a target has no place for are always left out and
 * reported, whatever the alias says.
 */
export function prepareRequest(adapter: ProviderAdapter, original: ChatRequest, target: UpstreamTarget, dropUnsupported: boolean, hostedTools: HostedToolsPolicy = "offer"): PreparedRequest {
  // Carried fields change no answer: a target without a place for them gets the request without them, named.
  const carried = carriedParamsDroppedBy(original, target.provider.kind);
  const unmarked = carried.length > 0 ? withoutCarried(original, carried) : original;
  const { request, dropped: hosted } = prepareHostedTools(adapter, unmarked, target, hostedTools);
  const dropped: DroppedParam[] = [...hosted, ...carried];
  const all: OptionalParam[] = adapter.unsupportedParams(request, target);
  const offers = all.filter((param) => OFFERS.has(param));
  const unsupported = all.filter((param) => !OFFERS.has(param));
  if (unsupported.length === 0) return { request: offers.length > 0 ? withoutParams(request, offers) : request, droppedParams: [...dropped, ...offers] };
  if (dropUnsupported) return { request: withoutParams(request, all), droppedParams: [...dropped, ...all] };
  const provider = target.provider;
  throw new GatewayError("invalid_request", `${unsupported.join(", ")}: not supported by provider ${provider.name} (${provider.kind}); remove ${unsupported.length > 1 ? "them" : "it"}, or set dropUnsupportedParams on the model alias`, {
    field: unsupported[0]!,
    provider: provider.name,
  });
}
