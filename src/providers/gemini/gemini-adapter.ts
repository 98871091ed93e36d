import type { ProviderAdapter } from "../provider.js";
import { withReasoningVisibility } from "../reasoning-visibility.js";
import { errorFromResponse } from "../upstream-errors.js";
import { buildGeminiRequest, geminiUnsupportedParams } from "./gemini-request.js";
import { createGeminiTranslator } from "./gemini-translator.js";
import { geminiHosted } from "./grounding-tools.js";

/** Google Gemini API (generativelanguage), streaming with `alt=sse`. */
export const geminiAdapter: ProviderAdapter = {
  unsupportedParams: geminiUnsupportedParams,
  buildRequest: buildGeminiRequest,
  createTranslator: (target, request) => withReasoningVisibility(createGeminiTranslator(target), request),
  errorFromResponse,
  hosted: geminiHosted,
};
