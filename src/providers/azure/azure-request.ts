import { AZURE_CHAT_API_VERSION, AZURE_RESPONSES_API_VERSION, type AzureConfig } from "../../config/azure-schema.js";
import type { ChatRequest } from "../../core/chat-request.js";
import { openAiRequestBody } from "../openai/openai-request.js";
import { responsesRequestBody } from "../openai-responses/responses-request.js";
import type { UpstreamRequest, UpstreamTarget } from "../provider.js";

/** The settings of an Azure target; a provider written without an `azure` block reads the defaults. */
export function azureSettings(target: UpstreamTarget): AzureConfig {
  return target.provider.azure ?? { api: "chat" };
}

/** Whether the request carries a bearer token (Entra ID) rather than the `api-key` header. */
export function usesBearer(settings: AzureConfig): boolean {
  return settings.entra !== undefined || settings.staticToken !== undefined;
}

/**
 * An Azure URL: deployment-scoped routes (`/deployments/{deployment}/…`)
 * for Chat Completions and embeddings, the resource's `/responses` for the
 * Responses API; `api-version` on every one, as Azure refuses a request without it.
 */
export function azureUrl(target: UpstreamTarget, route: "chat/completions" | "embeddings" | "responses"): string {
  const settings = azureSettings(target);
  const version = settings.apiVersion ?? (route === "responses" ? AZURE_RESPONSES_API_VERSION : AZURE_CHAT_API_VERSION);
  const path = route === "responses" ? "/responses" : `/deployments/${encodeURIComponent(target.model)}/${route}`;
  return `${target.provider.baseUrl}${path}?api-version=${encodeURIComponent(version)}`;
}

/** Azure's headers: the `api-key` header for a key; a bearer token is added by `authorize`. */
export function azureHeaders(target: UpstreamTarget, accept: string): Record<string, string> {
  const key = target.provider.apiKey;
  return { "content-type": "application/json", accept, ...(key && !usesBearer(azureSettings(target)) ? { "api-key": key.reveal() } : {}) };
}

/**
 * The request on the configured wire: the OpenAI builders' bodies as they
 * are (the deployment name as `model`, as Azure's own SDK sends it), with
 * Azure's URL and headers.
 */
export function buildAzureRequest(request: ChatRequest, target: UpstreamTarget): UpstreamRequest {
  const responses = azureSettings(target).api === "responses";
  const body = responses ? responsesRequestBody(request, target.model, "azure-openai") : openAiRequestBody(request, target.model, "azure-openai");
  return { url: azureUrl(target, responses ? "responses" : "chat/completions"), headers: azureHeaders(target, "text/event-stream"), body: JSON.stringify(body) };
}
