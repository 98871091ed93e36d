import type { ProviderAdapter } from "../provider.js";
import { errorFromStatus, sanitizeUpstreamMessage } from "../upstream-errors.js";
import { buildOpenAiRequest } from "./openai-request.js";
import { createOpenAiTranslator } from "./openai-translator.js";

function errorMessage(body: string): string | undefined {
  try {
    const parsed = JSON.parse(body) as { error?: { message?: unknown } | string };
    if (typeof parsed.error === "string") return parsed.error;
    if (typeof parsed.error?.message === "string") return parsed.error.message;
  } catch {
    // Not JSON (a proxy's HTML page, say): no detail worth relaying.
  }
  return undefined;
}

/** Any server speaking OpenAI Chat Completions: OpenAI, vLLM, llama.cpp, Ollama, Groq, DeepSeek… */
export const openAiAdapter: ProviderAdapter = {
  buildRequest: buildOpenAiRequest,
  createTranslator: createOpenAiTranslator,
  errorFromResponse(failure, target) {
    const message = errorMessage(failure.body);
    return errorFromStatus(failure.status, target, failure, message ? sanitizeUpstreamMessage(message, target) : undefined);
  },
};
