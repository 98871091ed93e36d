import type { ProviderAdapter } from "../provider.js";
import { errorFromResponse } from "../upstream-errors.js";
import { buildOpenAiRequest } from "./openai-request.js";
import { createOpenAiTranslator } from "./openai-translator.js";

/** Any server speaking OpenAI Chat Completions: OpenAI, vLLM, llama.cpp, Ollama, Groq, DeepSeek… */
export const openAiAdapter: ProviderAdapter = {
  buildRequest: buildOpenAiRequest,
  createTranslator: createOpenAiTranslator,
  errorFromResponse,
};
