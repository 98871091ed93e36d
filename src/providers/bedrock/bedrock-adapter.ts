import type { ProviderAdapter } from "../provider.js";
import { withReasoningVisibility } from "../reasoning-visibility.js";
import { bedrockErrorFromResponse } from "./bedrock-errors.js";
import { buildConverseRequest, converseUnsupportedParams } from "./converse-request.js";
import { createConverseTranslator } from "./converse-translator.js";
import { eventStreamFraming } from "./event-stream-framing.js";
import { signBedrockRequest } from "./sigv4.js";

/** AWS Bedrock's ConverseStream API: one request shape for every model, answered in AWS event-stream framing, signed with SigV4. */
export const bedrockAdapter: ProviderAdapter = {
  unsupportedParams: converseUnsupportedParams,
  buildRequest: buildConverseRequest,
  createTranslator: (target, request) => withReasoningVisibility(createConverseTranslator(target), request),
  errorFromResponse: bedrockErrorFromResponse,
  framing: eventStreamFraming,
  authorize: (request, target, signal) => signBedrockRequest(request, target.provider, signal),
};
