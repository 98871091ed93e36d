import type { ProviderAdapter } from "../provider.js";
import { withReasoningVisibility } from "../reasoning-visibility.js";
import { errorFromResponse } from "../upstream-errors.js";
import { anthropicUnsupportedParams, buildAnthropicRequest } from "./anthropic-request.js";
import { createAnthropicTranslator } from "./anthropic-translator.js";
import { anthropicHosted } from "./server-tools.js";

/** Anthropic Messages API. Status 529 (overloaded) maps like any 5xx: UNAVAILABLE. */
export const anthropicAdapter: ProviderAdapter = {
  unsupportedParams: anthropicUnsupportedParams,
  buildRequest: buildAnthropicRequest,
  createTranslator: (target, request) => withReasoningVisibility(createAnthropicTranslator(target), request),
  errorFromResponse,
  hosted: anthropicHosted,
};
