import type { HostedTool } from "../../core/chat-request.js";
import type { HostedSupport, ProviderAdapter } from "../provider.js";
import { withReasoningVisibility } from "../reasoning-visibility.js";
import { errorFromResponse } from "../upstream-errors.js";
import { buildResponsesRequest, responsesUnsupportedParams } from "./responses-request.js";
import { createResponsesTranslator } from "./responses-translator.js";

/** OpenAI's hosted tools run as declared; Anthropic's web search is OpenAI's `web_search`. */
const responsesHosted: HostedSupport = {
  origin: "openai",
  equivalent(tool: HostedTool): HostedTool | undefined {
    return tool.kind === "web_search" ? { type: "web_search", kind: "web_search", origin: "openai", declaration: { type: "web_search" } } : undefined;
  },
};

/**
 * An upstream's `/v1/responses` (OpenAI, Azure OpenAI): reasoning items,
 * custom tools and hosted tools reach it as they are, where the Chat
 * Completions adapter would have to map or drop them.
 */
export const responsesAdapter: ProviderAdapter = {
  unsupportedParams: responsesUnsupportedParams,
  buildRequest: buildResponsesRequest,
  createTranslator: (target, request) => withReasoningVisibility(createResponsesTranslator(target), request),
  errorFromResponse,
  hosted: responsesHosted,
};
