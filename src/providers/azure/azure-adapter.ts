import { openAiUnsupportedParams } from "../openai/openai-request.js";
import { createOpenAiTranslator } from "../openai/openai-translator.js";
import { responsesUnsupportedParams } from "../openai-responses/responses-request.js";
import { createResponsesTranslator } from "../openai-responses/responses-translator.js";
import type { ProviderAdapter } from "../provider.js";
import { withReasoningVisibility } from "../reasoning-visibility.js";
import { errorFromResponse } from "../upstream-errors.js";
import { authorizeAzure } from "./azure-auth.js";
import { azureSettings, buildAzureRequest } from "./azure-request.js";

/**
 * Azure OpenAI: OpenAI's two wires behind Azure's URLs, `api-version` and
 * credentials. The stream is OpenAI's: Azure's extra first chunk (empty
 * `choices`, `prompt_filter_results`) and per-choice `content_filter_results`
 * carry no delta and are read past; `finish_reason: content_filter` is a
 * finish like OpenAI's; its error bodies (`{"error": {"code", "message"}}`,
 * a 400 with code `content_filter` for a filtered prompt) read as OpenAI's.
 */
export const azureAdapter: ProviderAdapter = {
  unsupportedParams: (request, target) => (azureSettings(target).api === "responses" ? responsesUnsupportedParams(request) : openAiUnsupportedParams(request)),
  buildRequest: buildAzureRequest,
  createTranslator: (target, request) => withReasoningVisibility(azureSettings(target).api === "responses" ? createResponsesTranslator(target) : createOpenAiTranslator(target), request),
  errorFromResponse,
  authorize: authorizeAzure,
};
