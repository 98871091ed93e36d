import type { ProviderAdapter } from "../provider.js";
import { errorFromResponse } from "../upstream-errors.js";
import { buildAnthropicRequest } from "./anthropic-request.js";
import { createAnthropicTranslator } from "./anthropic-translator.js";

/** Anthropic Messages API. Status 529 (overloaded) maps like any 5xx: UNAVAILABLE. */
export const anthropicAdapter: ProviderAdapter = {
  buildRequest: buildAnthropicRequest,
  createTranslator: createAnthropicTranslator,
  errorFromResponse,
};
