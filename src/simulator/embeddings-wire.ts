import { checkSigV4 } from "./bedrock-auth.js";
import { DEFAULT_EMBEDDING_DIMENSIONS, embedText, embedTokens, MAX_EMBEDDING_DIMENSIONS, words } from "./embedding-vectors.js";
import type { AuthCheck, AuthRefusal } from "./wire.js";

/** Most inputs in one embedding request (OpenAI's own limit). */
export const MAX_EMBEDDING_INPUTS = 2_048;

/** One input to embed: a text, or token ids (OpenAI's token-array form). */
export type EmbeddingInput = string | readonly number[];

/** An embedding request as the simulator sees it, whichever API carried it. */
export interface EmbeddingRequest {
  readonly model: string;
  readonly inputs: readonly EmbeddingInput[];
  readonly dimensions?: number;
  /** OpenAI's `encoding_format`: vectors as JSON numbers, or base64 of little-endian float32. */
  readonly encoding: "float" | "base64";
  /** Gemini: asked through batchEmbedContents (answered as a list), not embedContent. */
  readonly batch?: boolean;
}

/** One embeddings API: its request shape, its response shape, its error shape. */
export interface EmbeddingsWire {
  readonly name: string;
  parseRequest(body: unknown, path: string): EmbeddingRequest;
  responseBody(request: EmbeddingRequest, vectors: readonly number[][], promptTokens: number): unknown;
  errorBody(status: number, message: string): unknown;
  /** As WireFormat.checkAuth. */
  checkAuth?(request: AuthCheck): AuthRefusal | undefined | Promise<AuthRefusal | undefined>;
}

function fail(message: string): never {
  throw new Error(message);
}

function dimensionsOf(value: unknown, name: string): number | undefined {
  if (value === undefined || value === null) return undefined;
  if (!Number.isInteger(value) || (value as number) < 1 || (value as number) > MAX_EMBEDDING_DIMENSIONS) fail(`${name} must be an integer in 1..${MAX_EMBEDDING_DIMENSIONS}`);
  return value as number;
}

const isTokenArray = (value: unknown): value is number[] => Array.isArray(value) && value.length > 0 && value.every((t) => Number.isInteger(t) && t >= 0);

function openAiInputs(input: unknown): EmbeddingInput[] {
  if (typeof input === "string") return [input];
  if (isTokenArray(input)) return [input];
  if (!Array.isArray(input) || input.length === 0) fail("'input' must be a non-empty string, array of strings, or array of token arrays");
  if (input.length > MAX_EMBEDDING_INPUTS) fail(`'input' has ${input.length} items; at most ${MAX_EMBEDDING_INPUTS}`);
  return input.map((item, i) => {
    if (typeof item === "string" && item.length > 0) return item;
    if (isTokenArray(item)) return item;
    return fail(`'input[${i}]' must be a non-empty string or token array`);
  });
}

export const openAiEmbeddingsWire: EmbeddingsWire = {
  name: "openai",
  parseRequest(body) {
    const b = (body ?? {}) as { model?: unknown; input?: unknown; dimensions?: unknown; encoding_format?: unknown };
    if (typeof b.model !== "string" || b.model === "") fail("'model' is required");
    const encoding = b.encoding_format ?? "float";
    if (encoding !== "float" && encoding !== "base64") fail("'encoding_format' must be 'float' or 'base64'");
    const dimensions = dimensionsOf(b.dimensions, "'dimensions'");
    return { model: b.model, inputs: openAiInputs(b.input), encoding, ...(dimensions === undefined ? {} : { dimensions }) };
  },
  responseBody(request, vectors, promptTokens) {
    return {
      object: "list",
      data: vectors.map((vector, index) => ({
        object: "embedding",
        index,
        embedding: request.encoding === "base64" ? Buffer.from(Float32Array.from(vector).buffer).toString("base64") : vector,
      })),
      model: request.model,
      usage: { prompt_tokens: promptTokens, total_tokens: promptTokens },
    };
  },
  errorBody(status, message) {
    return { error: { message, type: status === 429 ? "rate_limit_exceeded" : status >= 500 ? "server_error" : "invalid_request_error", param: null, code: null } };
  },
};

const GEMINI_PATH = /^\/v1beta\/models\/(.+):(embedContent|batchEmbedContents)$/;

/** Whether `path` is one of Gemini's embedding methods. */
export function isGeminiEmbeddingPath(path: string): boolean {
  return GEMINI_PATH.test(path);
}

function geminiText(content: unknown, where: string): string {
  const parts = (content as { parts?: unknown } | undefined)?.parts;
  if (!Array.isArray(parts) || parts.length === 0) fail(`${where}.content.parts must be a non-empty list`);
  const text = parts.map((p: { text?: unknown }) => (typeof p?.text === "string" ? p.text : fail(`${where}.content.parts: only text parts can be embedded`))).join(" ");
  return text;
}

export const geminiEmbeddingsWire: EmbeddingsWire = {
  name: "gemini",
  parseRequest(body, path) {
    const match = GEMINI_PATH.exec(path) ?? fail("not a Gemini embedding path");
    const model = decodeURIComponent(match[1]!);
    const b = (body ?? {}) as { content?: unknown; outputDimensionality?: unknown; requests?: unknown };
    if (match[2] === "embedContent") {
      const dimensions = dimensionsOf(b.outputDimensionality, "outputDimensionality");
      return { model, inputs: [geminiText(b.content, "request")], encoding: "float", ...(dimensions === undefined ? {} : { dimensions }) };
    }
    if (!Array.isArray(b.requests) || b.requests.length === 0) fail("requests must be a non-empty list");
    if (b.requests.length > MAX_EMBEDDING_INPUTS) fail(`at most ${MAX_EMBEDDING_INPUTS} requests in one batch`);
    const requests = b.requests as Array<{ content?: unknown; outputDimensionality?: unknown }>;
    const dimensions = dimensionsOf(requests[0]!.outputDimensionality, "requests[0].outputDimensionality");
    const inputs = requests.map((r, i) => {
      if (dimensionsOf(r.outputDimensionality, `requests[${i}].outputDimensionality`) !== dimensions) fail("every request of a batch must ask for the same outputDimensionality");
      return geminiText(r.content, `requests[${i}]`);
    });
    return { model, inputs, encoding: "float", ...(dimensions === undefined ? {} : { dimensions }), batch: true };
  },
  responseBody(request, vectors) {
    if (request.batch) return { embeddings: vectors.map((values) => ({ values })) };
    return { embedding: { values: vectors[0] } };
  },
  errorBody(status, message) {
    const code = status === 429 ? "RESOURCE_EXHAUSTED" : status >= 500 ? "UNAVAILABLE" : "INVALID_ARGUMENT";
    return { error: { code: status, message, status: code } };
  },
};

const BEDROCK_PATH = /^\/model\/((?:amazon\.titan-embed|cohere\.embed)[^/]*)\/invoke$/;

/**
 * Bedrock's embedding models through InvokeModel, SigV4-checked: Titan
 * (`{inputText, dimensions}` → `{embedding, inputTextTokenCount}`, one text)
 * and Cohere (`{texts, input_type}` → `{embeddings}`, up to 96 texts).
 */
export const bedrockEmbeddingsWire: EmbeddingsWire = {
  name: "bedrock",
  checkAuth: checkSigV4,
  parseRequest(body, path) {
    const model = decodeURIComponent((BEDROCK_PATH.exec(path) ?? fail("not a Bedrock embedding path"))[1]!);
    const b = (body ?? {}) as { inputText?: unknown; dimensions?: unknown; texts?: unknown; input_type?: unknown };
    if (model.startsWith("cohere.")) {
      if (!Array.isArray(b.texts) || b.texts.length === 0 || b.texts.length > 96) fail("texts: must be a list of 1 to 96 strings");
      if (typeof b.input_type !== "string") fail("input_type: required");
      return { model, inputs: b.texts.map((t, i) => (typeof t === "string" && t !== "" ? t : fail(`texts[${i}]: must be a non-empty string`))), encoding: "float", batch: true };
    }
    if (typeof b.inputText !== "string" || b.inputText === "") fail("inputText: required");
    const dimensions = dimensionsOf(b.dimensions, "dimensions");
    return { model, inputs: [b.inputText], encoding: "float", ...(dimensions === undefined ? {} : { dimensions }) };
  },
  responseBody(request, vectors, promptTokens) {
    if (request.batch) return { id: "sim", response_type: "embeddings_floats", embeddings: vectors, texts: request.inputs };
    return { embedding: vectors[0], inputTextTokenCount: promptTokens };
  },
  errorBody(_status, message) {
    return { message };
  },
};

/** The wire serving `method` `path`, if it is an embedding route. */
export function embeddingsWireFor(method: string, path: string): EmbeddingsWire | undefined {
  if (method !== "POST") return undefined;
  if (path === "/v1/embeddings") return openAiEmbeddingsWire;
  if (isGeminiEmbeddingPath(path)) return geminiEmbeddingsWire;
  if (BEDROCK_PATH.test(path)) return bedrockEmbeddingsWire;
  return undefined;
}

/** The vectors for a request, and its prompt tokens (a word or a token id each). */
export function embed(request: EmbeddingRequest, modelDimensions: number | undefined): { vectors: number[][]; promptTokens: number } {
  const dimensions = request.dimensions ?? modelDimensions ?? DEFAULT_EMBEDDING_DIMENSIONS;
  let promptTokens = 0;
  const vectors = request.inputs.map((input) => {
    if (typeof input === "string") {
      promptTokens += Math.max(1, words(input).length);
      return embedText(input, dimensions);
    }
    promptTokens += input.length;
    return embedTokens(input, dimensions);
  });
  return { vectors, promptTokens };
}
