import { readFile } from "node:fs/promises";
import { GoogleAuth, gaxios, JWT } from "google-auth-library";
import type { ProviderConfig } from "../../config/config.js";
import { GatewayError } from "../../core/errors.js";
import { sanitizeUpstreamMessage } from "../upstream-errors.js";

/** The one scope Vertex AI needs. */
export const CLOUD_PLATFORM_SCOPE = "https://www.googleapis.com/auth/cloud-platform";

/** Where google-auth-library 10 sends every service-account token request, whatever the key file says. */
const GOOGLE_TOKEN_URL = "https://oauth2.googleapis.com/token";

/** A token request that takes longer has failed (the library retries 5xx and resets within it). */
const TOKEN_TIMEOUT_MS = 10_000;

/** A service-account key file is about 2.3 KiB; anything far larger is not one. */
const MAX_KEY_FILE_BYTES = 64 * 1024;

/** What reads a bearer token: the library caches it and fetches a new one five minutes before it expires. */
interface TokenSource {
  getAccessToken(): Promise<{ token?: string | null }>;
}

interface ServiceAccountKey {
  readonly type?: unknown;
  readonly client_email?: unknown;
  readonly private_key?: unknown;
  readonly private_key_id?: unknown;
  readonly token_uri?: unknown;
}

async function readKeyFile(path: string): Promise<ServiceAccountKey> {
  const text = await readFile(path, "utf8");
  if (text.length > MAX_KEY_FILE_BYTES) throw new Error(`key file ${path} is not a service-account key (too large)`);
  let key: ServiceAccountKey;
  try {
    key = JSON.parse(text) as ServiceAccountKey;
  } catch {
    // Never the parser's message: it may quote the private key.
    throw new Error(`key file ${path} is not JSON`);
  }
  if (key.type !== "service_account" || typeof key.client_email !== "string" || typeof key.private_key !== "string") {
    throw new Error(`key file ${path} is not a service-account key (type, client_email and private_key are required)`);
  }
  return key;
}

/**
 * A JWT client for a service-account key. google-auth-library 10 ignores
 * the key's `token_uri` and always posts to Google's endpoint; its
 * documented `transporter` option takes a Gaxios instance, whose request
 * interceptor sends the request where the key says (the same URL for every
 * key Google issues; the simulator's for tests).
 */
function serviceAccountClient(key: ServiceAccountKey): TokenSource {
  const transporter = new gaxios.Gaxios({ timeout: TOKEN_TIMEOUT_MS });
  const tokenUri = typeof key.token_uri === "string" ? key.token_uri : GOOGLE_TOKEN_URL;
  transporter.interceptors.request.add({
    resolved: async (options) => {
      if (String(options.url) === GOOGLE_TOKEN_URL) options.url = new URL(tokenUri);
      return options;
    },
  });
  return new JWT({
    email: key.client_email as string,
    key: key.private_key as string,
    ...(typeof key.private_key_id === "string" ? { keyId: key.private_key_id } : {}),
    scopes: [CLOUD_PLATFORM_SCOPE],
    transporter,
  });
}

async function createTokenSource(provider: ProviderConfig): Promise<TokenSource> {
  const keyFile = provider.vertex?.keyFile;
  if (keyFile !== undefined) return serviceAccountClient(await readKeyFile(keyFile));
  // Application Default Credentials: GOOGLE_APPLICATION_CREDENTIALS, gcloud's file, or the metadata server.
  const auth = new GoogleAuth({ scopes: [CLOUD_PLATFORM_SCOPE] });
  return { getAccessToken: async () => ({ token: await auth.getAccessToken() }) };
}

/** One token source per provider configuration: a reload builds a new one, requests between reloads share its cached token. */
const sources = new WeakMap<ProviderConfig, Promise<TokenSource>>();

function sourceFor(provider: ProviderConfig): Promise<TokenSource> {
  let source = sources.get(provider);
  if (!source) {
    source = createTokenSource(provider);
    sources.set(provider, source);
    // A key file that could not be read is read again on the next request (it may have been mounted since).
    source.catch(() => sources.delete(provider));
  }
  return source;
}

function untilAborted(signal: AbortSignal): Promise<never> {
  return new Promise((_, reject) => {
    if (signal.aborted) reject(signal.reason);
    else signal.addEventListener("abort", () => reject(signal.reason), { once: true });
  });
}

/**
 * A bearer token for a Vertex provider, cached and refreshed by
 * google-auth-library. A failure is `upstream_auth` naming the provider
 * with the library's reason, sanitized; never the assertion, the key or a
 * token (the library's error carries its request, so it is not kept as the cause).
 */
export async function vertexAccessToken(provider: ProviderConfig, signal: AbortSignal): Promise<string> {
  const fetchToken = async () => {
    const { token } = await (await sourceFor(provider)).getAccessToken();
    if (!token) throw new Error("no access token was returned");
    return token;
  };
  try {
    return await Promise.race([fetchToken(), untilAborted(signal)]);
  } catch (error) {
    if (signal.aborted) throw signal.reason;
    const reason = sanitizeUpstreamMessage(error instanceof Error ? error.message : String(error), { provider, model: "" });
    throw new GatewayError("upstream_auth", `provider ${provider.name} could not get a Google access token: ${reason}`, { provider: provider.name, cause: new Error("google access token") });
  }
}
