import type { ChatRequest } from "../../core/chat-request.js";
import { GatewayError } from "../../core/errors.js";
import { anthropicRequestBody } from "../anthropic/anthropic-request.js";
import { createAnthropicTranslator } from "../anthropic/anthropic-translator.js";
import { withCacheBreakpoints, withinBreakpointLimit } from "../anthropic/cache-breakpoints.js";
import { thinkingModeFor } from "../anthropic/thinking-modes.js";
import type { StreamTranslator, UpstreamRequest, UpstreamTarget } from "../provider.js";
import { bedrockStreamError } from "./bedrock-errors.js";
import { anthropicModelOf } from "./converse-request.js";

/** The Messages API version Bedrock's Claude models take, in the body instead of a header. */
export const BEDROCK_ANTHROPIC_VERSION = "bedrock-2023-05-31";

function claudeOf(target: UpstreamTarget): string {
  const claude = anthropicModelOf(target.model);
  if (claude === undefined) {
    throw new GatewayError("invalid_request", `provider ${target.provider.name} uses bedrock.api invoke, which speaks Anthropic's Messages body: model ${target.model} is not a Claude model`, { provider: target.provider.name });
  }
  return claude;
}

/**
 * InvokeModelWithResponseStream for Claude: Anthropic's own Messages body
 * (anthropic-request.ts: thinking by model, tools, cache breakpoints) with
 * `anthropic_version` and betas in the body, and no `model` (it is in the
 * path) nor `stream` (the path says it).
 */
export function buildInvokeRequest(request: ChatRequest, target: UpstreamTarget): UpstreamRequest {
  const claude = claudeOf(target);
  const { model: _model, stream: _stream, ...messages } = anthropicRequestBody(request, claude, target.thinking ?? target.provider.thinking ?? thinkingModeFor(claude));
  const betas = request.carried?.anthropicBetas ?? [];
  const body = { anthropic_version: BEDROCK_ANTHROPIC_VERSION, ...messages, ...(betas.length > 0 ? { anthropic_beta: betas } : {}) };
  return {
    url: `${target.provider.baseUrl}/model/${encodeURIComponent(target.model)}/invoke-with-response-stream`,
    headers: { "content-type": "application/json", accept: "application/vnd.amazon.eventstream" },
    body: JSON.stringify(target.promptCache === "auto" ? withCacheBreakpoints(body) : withinBreakpointLimit(body)),
  };
}

/**
 * `chunk` events whose `bytes` (base64) are Anthropic stream events, read
 * by Anthropic's own translator; exceptions are Bedrock's.
 */
export function createInvokeTranslator(target: UpstreamTarget): StreamTranslator {
  const provider = target.provider.name;
  const anthropic = createAnthropicTranslator(target);
  return {
    event(sse) {
      if (sse.event !== "chunk") {
        if (sse.event === undefined || sse.event === "" || sse.event.endsWith("Exception")) throw bedrockStreamError(provider, sse.event ?? "", undefined);
        return [];
      }
      let bytes: unknown;
      try {
        bytes = (JSON.parse(sse.data) as { bytes?: unknown }).bytes;
      } catch (cause) {
        throw new GatewayError("upstream_protocol", `provider ${provider} sent a malformed event`, { provider, cause });
      }
      if (typeof bytes !== "string") throw new GatewayError("upstream_protocol", `provider ${provider} sent a malformed event`, { provider });
      const data = Buffer.from(bytes, "base64").toString("utf8");
      let type: unknown;
      try {
        type = (JSON.parse(data) as { type?: unknown }).type;
      } catch (cause) {
        throw new GatewayError("upstream_protocol", `provider ${provider} sent a malformed event`, { provider, cause });
      }
      return anthropic.event({ event: typeof type === "string" ? type : undefined, data });
    },
    end: () => anthropic.end(),
  };
}
