import type { AzureConfig } from "../../config/azure-schema.js";
import type { UpstreamRequest, UpstreamTarget } from "../provider.js";
import { azureSettings } from "./azure-request.js";
import { entraTokenSource, type TokenSource } from "./entra-token.js";

/** One token source per provider's settings: a reload gives new settings and a new credential; the old ones are collected. */
const sources = new WeakMap<AzureConfig, TokenSource>();

function sourceFor(settings: AzureConfig): TokenSource {
  let source = sources.get(settings);
  if (!source) {
    source = entraTokenSource(settings);
    sources.set(settings, source);
  }
  return source;
}

/**
 * The bearer token an Azure provider authenticates with, when it does not
 * use the `api-key` header: a static token read at start, or a fresh
 * Entra ID token. Unchanged for an `api-key` provider.
 */
export async function authorizeAzure(request: UpstreamRequest, target: UpstreamTarget, signal: AbortSignal): Promise<UpstreamRequest> {
  const settings = azureSettings(target);
  let token: string;
  if (settings.staticToken) token = settings.staticToken.reveal();
  else if (settings.entra) token = await sourceFor(settings)(target.provider.name, signal);
  else return request;
  return { ...request, headers: { ...request.headers, authorization: `Bearer ${token}` } };
}
