import { type AccessToken, ClientSecretCredential, DefaultAzureCredential, type TokenCredential, type TokenCredentialOptions } from "@azure/identity";
import { AZURE_COGNITIVE_SCOPE, type AzureConfig } from "../../config/azure-schema.js";
import { GatewayError } from "../../core/errors.js";

/** A token is renewed this long before it expires (Entra tokens live 60–90 minutes). */
const REFRESH_MARGIN_MS = 5 * 60_000;
/** The longest a token request to Entra ID may take. */
const TOKEN_TIMEOUT_MS = 30_000;

/** A bearer token for one provider, renewed before it expires; concurrent requests share one renewal. */
export type TokenSource = (provider: string, signal: AbortSignal) => Promise<string>;

/** What a token source may be given besides the settings: a clock, and @azure/identity's client options (its HTTP client, in tests). */
export interface TokenSourceOptions {
  readonly now?: () => number;
  readonly clientOptions?: ClientOptions;
}

type ClientOptions = TokenCredentialOptions & { readonly disableInstanceDiscovery?: boolean };

function credentialFor(settings: AzureConfig, clientOptions: ClientOptions): TokenCredential {
  const entra = settings.entra ?? {};
  const authority = { ...clientOptions, ...(entra.authorityHost === undefined ? {} : { authorityHost: entra.authorityHost }) };
  if (entra.tenantId !== undefined && entra.clientId !== undefined && settings.clientSecret) {
    return new ClientSecretCredential(entra.tenantId, entra.clientId, settings.clientSecret.reveal(), authority);
  }
  return new DefaultAzureCredential({ ...authority, ...(entra.tenantId === undefined ? {} : { tenantId: entra.tenantId }), ...(entra.clientId === undefined ? {} : { managedIdentityClientId: entra.clientId }) });
}

/** Waits for `promise` unless `signal` aborts first (the renewal itself goes on for the other waiters). */
function unlessAborted<T>(promise: Promise<T>, signal: AbortSignal): Promise<T> {
  if (signal.aborted) return Promise.reject(signal.reason);
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => reject(signal.reason);
    signal.addEventListener("abort", onAbort, { once: true });
    promise.then(
      (value) => {
        signal.removeEventListener("abort", onAbort);
        resolve(value);
      },
      (error: unknown) => {
        signal.removeEventListener("abort", onAbort);
        reject(error);
      },
    );
  });
}

/**
 * Tokens from Microsoft Entra ID through @azure/identity (a service
 * principal's client secret, or DefaultAzureCredential's chain), cached
 * until shortly before they expire. A failure is `upstream_auth`: the
 * gateway's own credentials, not the caller's, were refused.
 */
export function entraTokenSource(settings: AzureConfig, options: TokenSourceOptions = {}): TokenSource {
  const now = options.now ?? Date.now;
  const credential = credentialFor(settings, options.clientOptions ?? {});
  let cached: AccessToken | undefined;
  let renewal: Promise<AccessToken> | undefined;
  const fresh = (t: AccessToken) => (t.refreshAfterTimestamp ?? t.expiresOnTimestamp - REFRESH_MARGIN_MS) > now();
  async function renew(provider: string): Promise<AccessToken> {
    let token: AccessToken | null;
    try {
      token = await credential.getToken(AZURE_COGNITIVE_SCOPE, { abortSignal: AbortSignal.timeout(TOKEN_TIMEOUT_MS) });
    } catch (cause) {
      throw new GatewayError("upstream_auth", `provider ${provider} could not get a Microsoft Entra ID token`, { provider, cause });
    }
    if (!token) throw new GatewayError("upstream_auth", `provider ${provider} got no Microsoft Entra ID token`, { provider });
    cached = token;
    return token;
  }
  return async (provider, signal) => {
    if (cached && fresh(cached)) return cached.token;
    renewal ??= renew(provider).finally(() => {
      renewal = undefined;
    });
    return (await unlessAborted(renewal, signal)).token;
  };
}
