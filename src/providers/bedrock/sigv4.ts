import { Sha256 } from "@aws-crypto/sha256-js";
import { defaultProvider } from "@aws-sdk/credential-provider-node";
import { SignatureV4 } from "@smithy/signature-v4";
import type { AwsCredentialIdentity, AwsCredentialIdentityProvider } from "@smithy/types";
import type { ProviderConfig } from "../../config/config.js";
import { GatewayError } from "../../core/errors.js";
import type { UpstreamRequest } from "../provider.js";

/** Bedrock's signing name (the endpoint is bedrock-runtime, the service is bedrock). */
const SERVICE = "bedrock";

/**
 * One signer per configured provider, kept while the provider's config
 * lives (a reload makes a new one): the default chain is memoized inside
 * it, so files, STS and instance metadata are read once and refreshed
 * before the credentials expire, not on every request.
 */
const signers = new WeakMap<ProviderConfig, SignatureV4>();

function credentialsFor(provider: ProviderConfig): AwsCredentialIdentityProvider | AwsCredentialIdentity {
  const fixed = provider.bedrock?.credentials;
  if (!fixed) return defaultProvider();
  return { accessKeyId: fixed.accessKeyId, secretAccessKey: fixed.secretAccessKey.reveal(), ...(fixed.sessionToken ? { sessionToken: fixed.sessionToken.reveal() } : {}) };
}

function signerFor(provider: ProviderConfig): SignatureV4 {
  let signer = signers.get(provider);
  if (!signer) {
    const region = provider.bedrock?.region;
    if (region === undefined) throw new GatewayError("internal", `provider ${provider.name} (bedrock) has no region`, { provider: provider.name });
    signer = new SignatureV4({ service: SERVICE, region, credentials: credentialsFor(provider), sha256: Sha256 });
    signers.set(provider, signer);
  }
  return signer;
}

function abortedBy(signal: AbortSignal): Promise<never> {
  return new Promise((_, reject) => {
    if (signal.aborted) reject(signal.reason);
    else signal.addEventListener("abort", () => reject(signal.reason), { once: true });
  });
}

/**
 * The request signed with SigV4 over its final URL, headers and body, as the
 * AWS SDK signs it (the path escaped once more for the canonical request).
 * `host` is signed but not sent: the HTTP client writes the same value from
 * the URL. A credential the chain cannot find is the operator's to fix:
 * `upstream_auth`, with the chain's reason as the cause (it names no secret).
 */
export async function signBedrockRequest(request: UpstreamRequest, provider: ProviderConfig, signal: AbortSignal): Promise<UpstreamRequest> {
  const url = new URL(request.url);
  const query: Record<string, string> = {};
  for (const [k, v] of url.searchParams) query[k] = v;
  const unsigned = {
    method: "POST",
    protocol: url.protocol,
    hostname: url.hostname,
    ...(url.port === "" ? {} : { port: Number(url.port) }),
    path: url.pathname,
    query,
    headers: { ...request.headers, host: url.host },
    body: request.body,
  };
  let signed: Awaited<ReturnType<SignatureV4["sign"]>>;
  try {
    signed = await Promise.race([signerFor(provider).sign(unsigned), abortedBy(signal)]);
  } catch (cause) {
    if (signal.aborted || cause instanceof GatewayError) throw cause;
    throw new GatewayError("upstream_auth", `provider ${provider.name} (bedrock): no AWS credentials to sign with`, { provider: provider.name, cause });
  }
  const { host: _host, ...headers } = signed.headers;
  return { ...request, headers };
}
