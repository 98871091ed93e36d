import type { ProviderKind } from "../core/chat-request.js";

/**
 * Where each API-key kind carries its key, as its adapter writes it. Kinds
 * absent here (bedrock, vertex) sign with their credential chains and take
 * no stored key.
 */
const KEY_HEADERS: Partial<Record<ProviderKind, { readonly name: string; readonly value: (key: string) => string }>> = {
  openai: { name: "authorization", value: (key) => `Bearer ${key}` },
  "openai-responses": { name: "authorization", value: (key) => `Bearer ${key}` },
  anthropic: { name: "x-api-key", value: (key) => key },
  gemini: { name: "x-goog-api-key", value: (key) => key },
  "azure-openai": { name: "api-key", value: (key) => key },
};

/** What of a provider request the key lives in (upstream/http-client.ts's UpstreamRequest has it). */
export interface KeyedRequest {
  readonly headers: Readonly<Record<string, string>>;
}

/** Whether a provider of this kind authenticates with an API key a stored one can replace. */
export function takesStoredKey(kind: ProviderKind): boolean {
  return KEY_HEADERS[kind] !== undefined;
}

/** Whether the request as its adapter built it carries a key (apiKeyEnv's): the fallback a refused new key leaves. */
export function carriesKey(request: KeyedRequest, kind: ProviderKind): boolean {
  const header = KEY_HEADERS[kind];
  return header !== undefined && Object.keys(request.headers).some((name) => name.toLowerCase() === header.name);
}

/**
 * The request with `key` in its kind's header, replacing the one it was
 * built with. An Azure request with an Entra ID bearer token
 * (`authorization`) is left as it is: that provider does not use an API key.
 */
export function withKey<R extends KeyedRequest>(request: R, kind: ProviderKind, key: string): R {
  const header = KEY_HEADERS[kind];
  if (!header) return request;
  if (kind === "azure-openai" && Object.keys(request.headers).some((name) => name.toLowerCase() === "authorization")) return request;
  const headers: Record<string, string> = {};
  for (const [name, value] of Object.entries(request.headers)) if (name.toLowerCase() !== header.name) headers[name] = value;
  headers[header.name] = header.value(key);
  return { ...request, headers };
}
