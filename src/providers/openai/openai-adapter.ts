import type { ProviderAdapter } from "../provider.js";
import { withReasoningVisibility } from "../reasoning-visibility.js";
import { errorFromResponse } from "../upstream-errors.js";
import { buildOpenAiRequest, openAiUnsupportedParams } from "./openai-request.js";
import { createOpenAiTranslator } from "./openai-translator.js";

/** Any server speaking OpenAI Chat Completions: OpenAI, vLLM, llama.cpp, Ollama, Groq, DeepSeek… */
export const openAiAdapter: ProviderAdapter = {
  unsupportedParams: openAiUnsupportedParams,
  buildRequest: buildOpenAiRequest,
  createTranslator: (target, request) => withReasoningVisibility(createOpenAiTranslator(target), request),
  errorFromResponse,
};
