import { generateKeyPairSync, type KeyObject, randomBytes, randomUUID, verify } from "node:crypto";
import { replyJson, type SimExchange } from "./exchange.js";
import type { AuthRefusal } from "./wire.js";

/** Where the simulator's token endpoint lives (Google's is https://oauth2.googleapis.com/token). */
export const GOOGLE_TOKEN_PATH = "/google/oauth2/token";

/** The audience google-auth-library puts in every assertion, whatever the key file's token_uri. */
const GOOGLE_TOKEN_AUDIENCE = "https://oauth2.googleapis.com/token";
const CLOUD_PLATFORM_SCOPE = "https://www.googleapis.com/auth/cloud-platform";
/** Tokens kept at most; the oldest are forgotten first. */
const MAX_TOKENS = 10_000;

/** A service-account key file as Google issues it (JSON), generated at run time: no private key is ever stored in the repository. */
export interface ServiceAccountKey {
  readonly type: "service_account";
  readonly project_id: string;
  readonly private_key_id: string;
  readonly private_key: string;
  readonly client_email: string;
  readonly client_id: string;
  readonly token_uri: string;
}

export interface ServiceAccountOptions {
  /** Seconds each token issued to this account lives: Google's 3600 unless a test wants refreshes (under 300 the library refreshes before every request) or expired tokens (0). */
  readonly lifetimeSeconds?: number;
}

/** Google's OAuth token endpoint and bearer check, for the service accounts it created. */
export interface GoogleOAuth {
  /** A new service account whose key points its token requests at `tokenUri`. */
  serviceAccount(tokenUri: string, options?: ServiceAccountOptions): ServiceAccountKey;
  /** Token requests this account has made (granted or refused): how a test sees a cached token reused or refreshed. */
  tokenRequests(email: string): number;
  /** Answers a token request (`grant_type=urn:ietf:params:oauth:grant-type:jwt-bearer`). */
  serveToken(exchange: SimExchange): Promise<void>;
  /** A 401 in Google's words for a request without a valid, unexpired token it issued. */
  checkBearer(headers: Readonly<Record<string, string | string[] | undefined>>): AuthRefusal | undefined;
}

interface Account {
  readonly publicKey: KeyObject;
  readonly lifetimeSeconds: number;
  requests: number;
}

const base64url = (s: string) => Buffer.from(s, "base64url");

function parseJson(part: string): Record<string, unknown> | undefined {
  try {
    const value = JSON.parse(base64url(part).toString("utf8")) as unknown;
    return value !== null && typeof value === "object" ? (value as Record<string, unknown>) : undefined;
  } catch {
    return undefined;
  }
}

export function createGoogleOAuth(): GoogleOAuth {
  const accounts = new Map<string, Account>();
  const tokens = new Map<string, { email: string; expiresAt: number }>();

  /** The account an assertion is from, when it is signed by that account's key with RS256 for the token endpoint and the cloud-platform scope; else why not. */
  function verifyAssertion(assertion: string): { email: string } | { error: string } {
    const parts = assertion.split(".");
    if (parts.length !== 3) return { error: "Invalid JWT: Token must be a short-lived token and in a reasonable timeframe." };
    const [h, p, sig] = parts as [string, string, string];
    const header = parseJson(h);
    const claims = parseJson(p);
    if (header?.alg !== "RS256" || !claims) return { error: "Invalid JWT Signature." };
    const account = typeof claims.iss === "string" ? accounts.get(claims.iss) : undefined;
    if (!account) return { error: "Invalid grant: account not found" };
    account.requests++;
    if (!verify("sha256", Buffer.from(`${h}.${p}`), account.publicKey, base64url(sig))) return { error: "Invalid JWT Signature." };
    const now = Math.floor(Date.now() / 1000);
    if (typeof claims.exp !== "number" || typeof claims.iat !== "number" || claims.exp <= now || claims.iat > now + 60 || claims.exp - claims.iat > 3600) {
      return { error: "Invalid JWT: Token must be a short-lived token (60 minutes) and in a reasonable timeframe. Check your iat and exp values in the JWT claim." };
    }
    if (claims.aud !== GOOGLE_TOKEN_AUDIENCE && !(typeof claims.aud === "string" && claims.aud.endsWith(GOOGLE_TOKEN_PATH))) return { error: "Invalid JWT: Failed audience check." };
    if (typeof claims.scope !== "string" || !claims.scope.split(" ").includes(CLOUD_PLATFORM_SCOPE)) return { error: "Invalid OAuth scope or ID token audience provided." };
    return { email: claims.iss as string };
  }

  function issue(email: string, lifetimeSeconds: number): string {
    const token = `ya29.sim-${randomBytes(24).toString("base64url")}`;
    if (tokens.size >= MAX_TOKENS) tokens.delete(tokens.keys().next().value!);
    tokens.set(token, { email, expiresAt: Date.now() + lifetimeSeconds * 1000 });
    return token;
  }

  return {
    serviceAccount(tokenUri, options = {}) {
      const { publicKey, privateKey } = generateKeyPairSync("rsa", { modulusLength: 2048 });
      const id = randomUUID().slice(0, 8);
      const email = `sim-${id}@sim-project.iam.gserviceaccount.com`;
      accounts.set(email, { publicKey, lifetimeSeconds: options.lifetimeSeconds ?? 3600, requests: 0 });
      return {
        type: "service_account",
        project_id: "sim-project",
        private_key_id: randomBytes(20).toString("hex"),
        private_key: privateKey.export({ type: "pkcs8", format: "pem" }).toString(),
        client_email: email,
        client_id: String(BigInt(`0x${randomBytes(8).toString("hex")}`)),
        token_uri: tokenUri,
      };
    },
    tokenRequests: (email) => accounts.get(email)?.requests ?? 0,
    async serveToken(exchange) {
      const form = new URLSearchParams(await exchange.readBody());
      if (form.get("grant_type") !== "urn:ietf:params:oauth:grant-type:jwt-bearer") {
        replyJson(exchange.reply, 400, { error: "unsupported_grant_type", error_description: "Invalid grant_type." });
        return;
      }
      const verdict = verifyAssertion(form.get("assertion") ?? "");
      if ("error" in verdict) {
        replyJson(exchange.reply, 400, { error: "invalid_grant", error_description: verdict.error });
        return;
      }
      const lifetime = accounts.get(verdict.email)!.lifetimeSeconds;
      replyJson(exchange.reply, 200, { access_token: issue(verdict.email, lifetime), expires_in: lifetime, token_type: "Bearer" });
    },
    checkBearer(headers) {
      const header = headers.authorization;
      const token = typeof header === "string" && header.startsWith("Bearer ") ? header.slice(7) : undefined;
      if (token === undefined) {
        return { status: 401, message: "Request is missing required authentication credential. Expected OAuth 2 access token, login cookie or other valid authentication credential." };
      }
      const issued = tokens.get(token);
      if (!issued || issued.expiresAt <= Date.now()) {
        return { status: 401, message: "Request had invalid authentication credentials. Expected OAuth 2 access token, login cookie or other valid authentication credential." };
      }
      return undefined;
    },
  };
}
