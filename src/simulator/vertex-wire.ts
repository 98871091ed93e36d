import { anthropicWire } from "./anthropic-wire.js";
import { words } from "./embedding-vectors.js";
import { type EmbeddingsWire, geminiEmbeddingsWire, MAX_EMBEDDING_INPUTS } from "./embeddings-wire.js";
import { geminiWire, parseGeminiBody } from "./gemini-wire.js";
import type { GoogleOAuth } from "./google-oauth.js";
import type { AuthCheck, WireFormat } from "./wire.js";

/** `/v1/projects/{project}/locations/{location}/publishers/{publisher}/models/{model}:{method}` (v1beta1 too: the Gen AI SDK's default). */
const PATH = /^\/v1(?:beta1)?\/projects\/([^/]+)\/locations\/([^/]+)\/publishers\/(google|anthropic)\/models\/([^/:]+):(streamGenerateContent|generateContent|streamRawPredict|rawPredict)$/;

/** A text embedding model's `:predict` (Google's publisher only). */
const PREDICT_PATH = /^\/v1(?:beta1)?\/projects\/[^/]+\/locations\/[^/]+\/publishers\/google\/models\/([^/:]+):predict$/;

const GEMINI_METHODS = new Set(["streamGenerateContent", "generateContent"]);

/** The body version Claude on Vertex requires. */
const ANTHROPIC_VERSION = "vertex-2023-10-16";

interface VertexCall {
  readonly publisher: string;
  readonly model: string;
  readonly method: string;
}

function callOf(url: URL): VertexCall {
  const match = PATH.exec(url.pathname)!;
  return { publisher: match[3]!, model: decodeURIComponent(match[4]!), method: match[5]! };
}

/** Google's error shape, which Vertex's front end answers in for every publisher. */
function googleError(status: number, message: string): unknown {
  return { error: { code: status, message, status: status === 401 ? "UNAUTHENTICATED" : "PERMISSION_DENIED" } };
}

/**
 * Vertex AI's model paths for both publishers, behind a bearer token the
 * simulated Google OAuth endpoint issued. The bodies and streams are the
 * publishers' own wires (gemini-wire.ts, anthropic-wire.ts).
 */
export function createVertexWires(oauth: GoogleOAuth): { formatFor(path: string): WireFormat | undefined; embeddingsFor(path: string): EmbeddingsWire | undefined } {
  const checkAuth = (request: AuthCheck) => oauth.checkBearer(request.headers);
  const gemini: WireFormat = {
    ...geminiWire,
    name: "vertex-gemini",
    parseRequest(raw, url) {
      const call = callOf(url);
      return parseGeminiBody(raw, call.model, call.method === "streamGenerateContent");
    },
    checkAuth,
  };
  const anthropic: WireFormat = {
    ...anthropicWire,
    name: "vertex-anthropic",
    parseRequest(raw, url) {
      const call = callOf(url);
      const body = (raw ?? {}) as Record<string, unknown>;
      if ("model" in body) throw new Error("model: Extra inputs are not permitted");
      if (body.anthropic_version !== ANTHROPIC_VERSION) throw new Error(`anthropic_version: Input should be '${ANTHROPIC_VERSION}'`);
      const { anthropic_version: _, ...messages } = body;
      const request = anthropicWire.parseRequest({ ...messages, model: call.model }, url);
      if (call.method === "streamRawPredict" && !request.stream) throw new Error("stream: streamRawPredict requires `stream: true`");
      return request;
    },
    errorBody: (status, message) => (status === 401 || status === 403 ? googleError(status, message) : anthropicWire.errorBody(status, message)),
    checkAuth,
  };
  const embeddings: EmbeddingsWire = {
    name: "vertex",
    parseRequest(raw, path) {
      const model = decodeURIComponent(PREDICT_PATH.exec(path)![1]!);
      const body = (raw ?? {}) as { instances?: unknown; parameters?: { outputDimensionality?: unknown } };
      if (!Array.isArray(body.instances) || body.instances.length === 0) throw new Error("instances must be a non-empty list");
      if (body.instances.length > MAX_EMBEDDING_INPUTS) throw new Error(`at most ${MAX_EMBEDDING_INPUTS} instances`);
      const inputs = (body.instances as Array<{ content?: unknown }>).map((instance, i) => {
        if (typeof instance?.content !== "string" || instance.content === "") throw new Error(`instances[${i}].content must be a non-empty string`);
        return instance.content;
      });
      const dimensions = body.parameters?.outputDimensionality;
      if (dimensions !== undefined && (!Number.isInteger(dimensions) || (dimensions as number) < 1)) throw new Error("parameters.outputDimensionality must be a positive integer");
      return { model, inputs, encoding: "float", ...(dimensions === undefined ? {} : { dimensions: dimensions as number }) };
    },
    responseBody(request, vectors) {
      const predictions = vectors.map((values, i) => ({ embeddings: { values, statistics: { truncated: false, token_count: Math.max(1, words(String(request.inputs[i])).length) } } }));
      return { predictions, metadata: { billableCharacterCount: request.inputs.reduce((n, input) => n + String(input).length, 0) } };
    },
    errorBody: geminiEmbeddingsWire.errorBody,
    checkAuth,
  };
  return {
    embeddingsFor: (path) => (PREDICT_PATH.test(path) ? embeddings : undefined),
    formatFor(path) {
      const match = PATH.exec(path);
      if (!match) return undefined;
      const geminiMethod = GEMINI_METHODS.has(match[5]!);
      if (match[3] === "google") return geminiMethod ? gemini : undefined;
      return geminiMethod ? undefined : anthropic;
    },
  };
}
