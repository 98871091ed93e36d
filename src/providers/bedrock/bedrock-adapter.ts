import { anthropicUnsupportedParams } from "../anthropic/anthropic-request.js";
import type { ProviderAdapter, UpstreamTarget } from "../provider.js";
import { withReasoningVisibility } from "../reasoning-visibility.js";
import { bedrockErrorFromResponse } from "./bedrock-errors.js";
import { buildConverseRequest, converseUnsupportedParams } from "./converse-request.js";
import { createConverseTranslator } from "./converse-translator.js";
import { eventStreamFraming } from "./event-stream-framing.js";
import { buildInvokeRequest, createInvokeTranslator } from "./invoke-anthropic.js";
import { signBedrockRequest } from "./sigv4.js";

const invokes = (target: UpstreamTarget): boolean => target.provider.bedrock?.api === "invoke";

/**
 * AWS Bedrock: the ConverseStream API (one request shape for every model),
 * or, with `bedrock.api: invoke`, Claude's own Messages body through
 * InvokeModelWithResponseStream. Either answers in AWS event-stream
 * framing and is signed with SigV4.
 */
export const bedrockAdapter: ProviderAdapter = {
  unsupportedParams: (request, target) => (invokes(target) ? anthropicUnsupportedParams(request) : converseUnsupportedParams(request, target)),
  buildRequest: (request, target) => (invokes(target) ? buildInvokeRequest(request, target) : buildConverseRequest(request, target)),
  createTranslator: (target, request) => withReasoningVisibility(invokes(target) ? createInvokeTranslator(target) : createConverseTranslator(target), request),
  errorFromResponse: bedrockErrorFromResponse,
  framing: eventStreamFraming,
  authorize: (request, target, signal) => signBedrockRequest(request, target.provider, signal),
};
