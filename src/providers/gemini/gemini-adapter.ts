import type { ProviderAdapter } from "../provider.js";
import { errorFromResponse } from "../upstream-errors.js";
import { buildGeminiRequest } from "./gemini-request.js";
import { createGeminiTranslator } from "./gemini-translator.js";

/** Google Gemini API (generativelanguage), streaming with `alt=sse`. */
export const geminiAdapter: ProviderAdapter = {
  buildRequest: buildGeminiRequest,
  createTranslator: createGeminiTranslator,
  errorFromResponse,
};
