import { type EmbeddingsWire, openAiEmbeddingsWire } from "./embeddings-wire.js";
import { openAiWire } from "./openai-wire.js";
import { responsesWire } from "./responses-wire.js";
import type { AuthCheck, AuthRefusal, Frame, WireFormat } from "./wire.js";

/** The key the simulated Azure resource accepts in its `api-key` header. */
export const AZURE_SIM_KEY = "sim-azure-key-0123456789";
/** The Entra ID bearer token it accepts (what a test's token endpoint issues). */
export const AZURE_SIM_TOKEN = "sim-azure-entra-token";

const DEPLOYMENT_PATH = /^\/openai\/deployments\/([^/]+)\/(chat\/completions|embeddings)$/;

/** The route a path names on the simulated Azure resource, if any: a deployment's chat or embeddings, or the Responses API. */
export function azureRoute(path: string): { readonly deployment?: string; readonly route: "chat" | "embeddings" | "responses" } | undefined {
  if (path === "/openai/responses") return { route: "responses" };
  const match = DEPLOYMENT_PATH.exec(path);
  if (!match) return undefined;
  return { deployment: decodeURIComponent(match[1]!), route: match[2] === "embeddings" ? "embeddings" : "chat" };
}

/** Azure's own error shape for what it refuses before the model (a key, a route): `{"error": {"code": "401", "message"}}`. */
function azureError(status: number, message: string): unknown {
  return { error: { code: String(status), message } };
}

/**
 * Azure checks the credential before anything else: an `api-key` header
 * with the resource's key, or an Entra ID bearer token.
 */
function checkAzureAuth(request: AuthCheck): AuthRefusal | undefined {
  const key = request.headers["api-key"];
  const bearer = request.headers.authorization;
  if (key === AZURE_SIM_KEY || bearer === `Bearer ${AZURE_SIM_TOKEN}`) return undefined;
  if (typeof bearer === "string" && key === undefined) return { status: 401, message: "Unauthorized. Access token is missing, invalid, audience is incorrect (https://cognitiveservices.azure.com), or have expired." };
  return {
    status: 401,
    message: "Access denied due to invalid subscription key or wrong API endpoint. Make sure to provide a valid key for an active subscription and use a correct regional API endpoint for your resource.",
  };
}

/** Azure refuses a request without `api-version` (it answers 404 "Resource not found"; here a 400 says why, as parse errors do). */
function requireApiVersion(url: URL): void {
  if (!url.searchParams.get("api-version")) throw new Error("Missing required query parameter: api-version (Azure answers Resource not found)");
}

/** The first chunk Azure streams: no choices, the prompt's content-filter verdicts. */
function promptFilterFrame(): Frame {
  const safe = { filtered: false, severity: "safe" };
  return {
    data: JSON.stringify({
      choices: [],
      created: 0,
      id: "",
      model: "",
      object: "",
      prompt_filter_results: [{ prompt_index: 0, content_filter_results: { hate: safe, self_harm: safe, sexual: safe, violence: safe, jailbreak: { filtered: false, detected: false } } }],
    }),
    token: false,
  };
}

/**
 * Azure OpenAI Chat Completions: OpenAI's chunks behind Azure's route, key
 * and `api-version`, with the prompt-filter chunk first and content-filter
 * verdicts on every choice, as Azure streams them. The deployment in the
 * path is the model (knobs and all).
 */
export const azureChatWire: WireFormat = {
  ...openAiWire,
  name: "azure-openai",
  parseRequest(body, url) {
    requireApiVersion(url);
    const deployment = azureRoute(url.pathname)?.deployment ?? "";
    return { ...openAiWire.parseRequest({ ...(body as object), model: deployment }, url), model: deployment };
  },
  streamFrames(script, request, knobs, id) {
    const safe = { filtered: false, severity: "safe" };
    const verdicts = { hate: safe, self_harm: safe, sexual: safe, violence: safe };
    const frames = openAiWire.streamFrames(script, request, knobs, id).map((frame): Frame => {
      const chunk = JSON.parse(frame.data) as { choices?: Array<Record<string, unknown>> };
      if (!chunk.choices || chunk.choices.length === 0) return frame;
      return { ...frame, data: JSON.stringify({ ...chunk, choices: chunk.choices.map((c) => ({ ...c, content_filter_results: verdicts })) }) };
    });
    return [promptFilterFrame(), ...frames];
  },
  errorBody: (status, message) => (status === 401 || status === 403 || status === 404 || status === 429 ? azureError(status, message) : openAiWire.errorBody(status, message)),
  checkAuth: checkAzureAuth,
};

/** Azure's Responses API (`/openai/responses?api-version=…`): OpenAI's events, Azure's key and version; the deployment is `model`. */
export const azureResponsesWire: WireFormat = {
  ...responsesWire,
  name: "azure-openai-responses",
  parseRequest(body, url) {
    requireApiVersion(url);
    return responsesWire.parseRequest(body, url);
  },
  errorBody: (status, message) => (status === 401 || status === 403 || status === 404 || status === 429 ? azureError(status, message) : responsesWire.errorBody(status, message)),
  checkAuth: checkAzureAuth,
};

/** Azure's `/deployments/{deployment}/embeddings`: OpenAI's body and answer; the deployment is the model. */
export const azureEmbeddingsWire: EmbeddingsWire = {
  ...openAiEmbeddingsWire,
  name: "azure-openai",
  parseRequest(body, path) {
    const deployment = azureRoute(path)?.deployment ?? "";
    return { ...openAiEmbeddingsWire.parseRequest({ ...(body as object), model: deployment }, path), model: deployment };
  },
  errorBody: (status, message) => (status === 401 || status === 403 || status === 404 || status === 429 ? azureError(status, message) : openAiEmbeddingsWire.errorBody(status, message)),
  checkAuth: checkAzureAuth,
};
