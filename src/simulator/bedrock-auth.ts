import { Sha256 } from "@aws-crypto/sha256-js";
import { SignatureV4 } from "@smithy/signature-v4";
import type { AuthCheck, AuthRefusal } from "./wire.js";

/** The one AWS identity the simulated Bedrock knows: tests sign with it. */
export const SIMULATED_AWS_CREDENTIALS = { accessKeyId: "AKIDSIMULATEDBEDROCK", secretAccessKey: "simulated/bedrock/secret/key/0123456789" } as const;

const AUTHORIZATION = /^AWS4-HMAC-SHA256 Credential=([^/]+)\/(\d{8})\/([^/]+)\/([^/]+)\/aws4_request, ?SignedHeaders=([a-z0-9;-]+), ?Signature=([0-9a-f]{64})$/;

const header = (headers: AuthCheck["headers"], name: string): string | undefined => {
  const value = headers[name];
  return Array.isArray(value) ? value.join(",") : value;
};

/** x-amz-date (`20261207T071500Z`) as a Date. */
function amzDate(value: string): Date | undefined {
  const m = /^(\d{4})(\d{2})(\d{2})T(\d{2})(\d{2})(\d{2})Z$/.exec(value);
  return m ? new Date(Date.UTC(Number(m[1]), Number(m[2]) - 1, Number(m[3]), Number(m[4]), Number(m[5]), Number(m[6]))) : undefined;
}

/**
 * Bedrock's SigV4 check, redone with the AWS SDK's own signer over what
 * arrived: the signed headers, the path as sent, the body. An unknown key
 * is refused as `UnrecognizedClientException` would be; a signature that
 * does not match, with the message of `InvalidSignatureException`.
 */
export async function checkSigV4(request: AuthCheck): Promise<AuthRefusal | undefined> {
  const auth = header(request.headers, "authorization");
  const date = header(request.headers, "x-amz-date");
  const m = auth === undefined ? null : AUTHORIZATION.exec(auth);
  if (!m || date === undefined) return { status: 403, message: "Missing Authentication Token" };
  const [, keyId, , region, service, signedHeaders] = m;
  if (keyId !== SIMULATED_AWS_CREDENTIALS.accessKeyId) return { status: 403, message: "The security token included in the request is invalid." };
  const signingDate = amzDate(date);
  if (service !== "bedrock" || signingDate === undefined) return { status: 403, message: "Credential should be scoped to correct service: 'bedrock'." };
  const headers: Record<string, string> = {};
  for (const name of signedHeaders!.split(";")) {
    const value = header(request.headers, name);
    if (value !== undefined) headers[name] = value;
  }
  const query: Record<string, string> = {};
  for (const [k, v] of request.url.searchParams) query[k] = v;
  const signer = new SignatureV4({ service: "bedrock", region: region!, credentials: SIMULATED_AWS_CREDENTIALS, sha256: Sha256 });
  const signed = await signer.sign({ method: request.method, protocol: "http:", hostname: request.url.hostname, path: request.url.pathname, query, headers, body: request.body }, { signingDate });
  if (signed.headers.authorization === auth) return undefined;
  return {
    status: 403,
    message: "The request signature we calculated does not match the signature you provided. Check your AWS Secret Access Key and signing method. Consult the service documentation for details.",
  };
}
