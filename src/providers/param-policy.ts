import type { ChatRequest } from "../core/chat-request.js";
import { GatewayError } from "../core/errors.js";
import { type OptionalParam, withoutParams } from "../core/request-params.js";
import { type HostedToolsPolicy, prepareHostedTools } from "./hosted-tools.js";
import type { ProviderAdapter, UpstreamTarget } from "./provider.js";

export interface PreparedRequest {
  /** What may be sent to this target. */
  readonly request: ChatRequest;
  /** What was removed because the target cannot honour it (empty: nothing): optional parameters, hosted tools (`tools.web_search`) and their items. */
  readonly droppedParams: readonly string[];
}

/**
 * The unsupported-parameter rule, applied once per upstream attempt: a
 * parameter the target cannot honour is never dropped silently. By default
 * the request fails with INVALID_ARGUMENT naming the parameters and the
 * provider; an alias with `dropUnsupportedParams` sends the request without
 * them and the edges report what was dropped.
 */
export function prepareRequest(
  adapter: ProviderAdapter,
  original: ChatRequest,
  target: UpstreamTarget,
  dropUnsupported: boolean,
  hostedTools: HostedToolsPolicy = "offer",
): PreparedRequest {
  const { request, dropped } = prepareHostedTools(adapter, original, target, hostedTools);
  const unsupported: OptionalParam[] = adapter.unsupportedParams(request, target);
  if (unsupported.length === 0) return { request, droppedParams: dropped };
  if (dropUnsupported) return { request: withoutParams(request, unsupported), droppedParams: [...dropped, ...unsupported] };
  const provider = target.provider;
  throw new GatewayError(
    "invalid_request",
    `${unsupported.join(", ")}: not supported by provider ${provider.name} (${provider.kind}); remove ${unsupported.length > 1 ? "them" : "it"}, or set dropUnsupportedParams on the model alias`,
    { field: unsupported[0]!, provider: provider.name },
  );
}
