import { EventEmitter, once } from "node:events";
import { anthropicWire } from "./anthropic-wire.js";
import { azureChatWire, azureEmbeddingsWire, azureResponsesWire, azureRoute } from "./azure-wire.js";
import { bedrockInvokeWire, bedrockWire, isConversePath, isInvokePath } from "./bedrock-wire.js";
import { type EmbeddingRequest, type EmbeddingsWire, embed, embeddingsWireFor } from "./embeddings-wire.js";
import { replyJson, type SimExchange } from "./exchange.js";
import { expectedKeyCheck } from "./expected-key.js";
import { geminiWire, isGeminiPath } from "./gemini-wire.js";
import { createGoogleOAuth, GOOGLE_TOKEN_PATH, type GoogleOAuth } from "./google-oauth.js";
import { answerTokens, jsonAnswer } from "./json-answer.js";
import { applyScript, type Knobs, parseKnobs } from "./knobs.js";
import { openAiWire } from "./openai-wire.js";
import { createPromptCache } from "./prompt-cache.js";
import { createRandom } from "./random.js";
import { createRecordBook, now, type RecordBook, recordedHeaders } from "./records.js";
import { responsesWire } from "./responses-wire.js";
import { buildScript, type Script } from "./script.js";
import { pause, streamResponse } from "./stream-response.js";
import { countWords } from "./text.js";
import { nextAction } from "./tool-loop.js";
import { createVertexWires } from "./vertex-wire.js";
import type { SimRequest, WireFormat } from "./wire.js";

type VertexWires = ReturnType<typeof createVertexWires>;

/**
 * The simulated providers, apart from any transport: the three wire
 * formats, the knobs, the per-script counters and the records. A socket
 * server (server.ts) and an in-process dispatcher (in-process.ts) both hand
 * it exchanges, so a test moves between the two and keeps its scripts.
 */
export interface Simulation {
  readonly records: RecordBook;
  /** Generation requests whose response is not over yet. */
  readonly activeRequests: number;
  /** Whether `method` and `path` name a generation route (anything else is the carrier's own business). */
  serves(method: string, path: string): boolean;
  /** Serves one generation or embedding request; resolves once its response is over. */
  serve(exchange: SimExchange): Promise<void>;
  /** Resolves once no generation request is in progress (now or later); rejects after `timeoutMs`. */
  whenNoRequests(timeoutMs: number): Promise<void>;
  /** Forgets every record and every script's count. */
  reset(): void;
  /** Google's token endpoint (at GOOGLE_TOKEN_PATH) and the service accounts it knows, for the Vertex paths. */
  readonly googleOAuth: GoogleOAuth;
  /** Keys the OpenAI wire was sent, when it checks them (`acceptKeys`); else empty. */
  keysSeen(): readonly string[];
}

function formatFor(method: string, path: string, vertex: VertexWires): WireFormat | undefined {
  if (method !== "POST") return undefined;
  if (path === "/v1/chat/completions") return openAiWire;
  if (path === "/v1/messages") return anthropicWire;
  if (path === "/v1/responses") return responsesWire;
  if (isGeminiPath(path)) return geminiWire;
  if (isConversePath(path)) return bedrockWire;
  if (isInvokePath(path)) return bedrockInvokeWire;
  const azure = azureRoute(path);
  if (azure?.route === "chat") return azureChatWire;
  if (azure?.route === "responses") return azureResponsesWire;
  return vertex.formatFor(path);
}

/** The embeddings API serving `method` `path`: the shared table's, or an Azure deployment's. */
function embeddingsFor(method: string, path: string): EmbeddingsWire | undefined {
  return embeddingsWireFor(method, path) ?? (method === "POST" && azureRoute(path)?.route === "embeddings" ? azureEmbeddingsWire : undefined);
}

/**
 * Reasoning tokens of a model that must think (Anthropic `thinking:
 * enabled`, under which Claude always starts with a thinking block) and
 * whose knobs set none: without them the simulator would answer a turn
 * it then refuses on replay for its missing thinking block.
 */
const BRIEF_THOUGHT = 2;

/**
 * What the model says: the tool loop's next action (calls, or a quote of
 * the tool results it was given), with the seeded words, or a JSON answer
 * when the request asked for JSON.
 */
function scriptFor(asked: Knobs, request: SimRequest): Script {
  // A model told to think always does: a brief thought where the knobs set none (see BRIEF_THOUGHT).
  const knobs = request.mustThink && asked.reasoning === 0 ? { ...asked, reasoning: BRIEF_THOUGHT } : asked;
  const echoed = knobs.echo ? echoOf(request.texts) : undefined;
  const answer = request.json ? answerTokens(jsonAnswer(request.json.schema, knobs.seed)) : echoed === undefined ? undefined : piecesOf(echoed, 3);
  return buildScript(knobs, {
    inputTokens: countWords(request.texts),
    action: nextAction(request, knobs),
    ...(answer === undefined ? {} : { answer }),
    ...(echoed === undefined ? {} : { note: echoed }),
    ...(request.maxTokens === undefined ? {} : { maxTokens: request.maxTokens }),
  });
}

/** The last text of a request without its `#sim` directive lines. */
export function echoOf(texts: readonly string[]): string {
  return (texts.at(-1) ?? "")
    .split("\n")
    .filter((line) => !line.startsWith("#sim"))
    .join("\n")
    .trim();
}

function piecesOf(text: string, size: number): string[] {
  const pieces: string[] = [];
  for (let at = 0; at < text.length; at += size) pieces.push(text.slice(at, at + size));
  return pieces;
}

/** Knobs for one request: its model's and its texts', then its place in its script. */
function knobsFor(scripts: Map<string, number>, model: string, texts: readonly string[]): Knobs {
  const knobs = parseKnobs(model, texts);
  const script = knobs.script ?? model;
  const n = (scripts.get(script) ?? 0) + 1;
  scripts.set(script, n);
  const seed = knobs.seed;
  return applyScript(knobs, n, (i) => createRandom(seed * 7919 + i)());
}

export interface SimulationOptions {
  /** The bearer keys the OpenAI wire (chat completions, embeddings) accepts; others get a 401. Unset: any key, or none. */
  readonly acceptKeys?: readonly string[];
}

export function createSimulation(options: SimulationOptions = {}): Simulation {
  const keyCheck = options.acceptKeys ? expectedKeyCheck(options.acceptKeys) : undefined;
  const records = createRecordBook();
  /** Per-script request counters: what `fail_first`, `fail_rate` and `slow_every` count. */
  const scripts = new Map<string, number>();
  /** The prompt cache of providers that cache on request (Anthropic): prefixes live across requests. */
  const promptCache = createPromptCache();
  const idle = new EventEmitter();
  let active = 0;
  const googleOAuth = createGoogleOAuth();
  const vertex = createVertexWires(googleOAuth);

  /** Counts the exchange as active until its reply is over. */
  function track(reply: SimExchange["reply"]): void {
    active++;
    const left = () => {
      if (--active === 0) idle.emit("no-requests");
    };
    if (reply.gone.aborted) left();
    else reply.gone.addEventListener("abort", left, { once: true });
  }

  /** An embedding request: knobs, a pause, then every vector at once. */
  async function serveEmbeddings(exchange: SimExchange, wire: EmbeddingsWire, path: string): Promise<void> {
    const { reply } = exchange;
    track(reply);
    let request: EmbeddingRequest;
    let knobs: Knobs;
    let body: unknown;
    try {
      const raw = await exchange.readBody();
      const check = keyCheck && wire.name === "openai" ? keyCheck.check : wire.checkAuth;
      const refused = await check?.({ method: exchange.method, url: new URL(exchange.path, "http://simulator"), headers: exchange.headers, body: raw });
      if (refused) {
        replyJson(reply, refused.status, wire.errorBody(refused.status, refused.message));
        return;
      }
      body = JSON.parse(raw) as unknown;
      request = wire.parseRequest(body, path);
      knobs = knobsFor(
        scripts,
        request.model,
        request.inputs.filter((i): i is string => typeof i === "string"),
      );
      if (!["none", "status", "reset_before_headers", "reset"].includes(knobs.fail)) throw new Error(`simulator knob fail=${knobs.fail} does not apply to embeddings`);
    } catch (error) {
      replyJson(reply, 400, wire.errorBody(400, error instanceof Error ? error.message : "bad request"));
      return;
    }
    const requestId = exchange.headers["x-request-id"];
    const record = records.add({
      format: `${wire.name}-embeddings`,
      model: request.model,
      ...(knobs.tag === undefined ? {} : { tag: knobs.tag, body, path: exchange.path, headers: recordedHeaders(exchange.headers) }),
      ...(typeof requestId === "string" ? { requestId } : {}),
      arrivedAt: now(),
      tokensWritten: 0,
      tokensAfterClose: 0,
      bytesWritten: 0,
      outcome: "streaming",
    });
    const finish = (outcome: "completed" | "failed" | "client_closed") => {
      record.outcome = outcome;
      record.endedAt = now();
      records.touch(record);
    };
    if (knobs.fail === "reset_before_headers" || knobs.fail === "reset") {
      finish("failed");
      reply.disconnect("reset");
      return;
    }
    if (!(await pause(knobs.headersMs + knobs.ttftMs, reply.gone))) return finish("client_closed");
    if (knobs.fail === "status") {
      finish("failed");
      replyJson(reply, knobs.status, wire.errorBody(knobs.status, `simulated status ${knobs.status}`), knobs.retryAfter === undefined ? {} : { "retry-after": String(knobs.retryAfter) });
      return;
    }
    const { vectors, promptTokens } = embed(request, knobs.dims);
    record.tokensWritten = vectors.length;
    finish("completed");
    replyJson(reply, 200, wire.responseBody(request, vectors, promptTokens));
  }

  async function serve(exchange: SimExchange): Promise<void> {
    const { reply } = exchange;
    const url = new URL(exchange.path, "http://simulator");
    if (exchange.method === "POST" && url.pathname === GOOGLE_TOKEN_PATH) return googleOAuth.serveToken(exchange);
    const embeddings = embeddingsFor(exchange.method, url.pathname) ?? (exchange.method === "POST" ? vertex.embeddingsFor(url.pathname) : undefined);
    if (embeddings) return serveEmbeddings(exchange, embeddings, url.pathname);
    const format = formatFor(exchange.method, url.pathname, vertex);
    if (!format) throw new Error(`not a generation route: ${exchange.method} ${url.pathname}`);
    track(reply);

    let request: SimRequest;
    let knobs: Knobs;
    let body: unknown;
    try {
      const raw = await exchange.readBody();
      const check = keyCheck && format === openAiWire ? keyCheck.check : format.checkAuth;
      const refused = await check?.({ method: exchange.method, url, headers: exchange.headers, body: raw });
      if (refused) {
        replyJson(reply, refused.status, format.errorBody(refused.status, refused.message));
        return;
      }
      body = JSON.parse(raw) as unknown;
      request = format.parseRequest(body, url);
      knobs = knobsFor(scripts, request.model, request.texts);
      // An older model without native structured outputs refuses the schema, as providers do.
      if (!knobs.structured && request.json?.schema) throw new Error("structured outputs (a response schema) are not supported by this model");
    } catch (error) {
      replyJson(reply, 400, format.errorBody(400, error instanceof Error ? error.message : "bad request"));
      return;
    }
    const requestId = exchange.headers["x-request-id"];
    const traceparent = exchange.headers.traceparent;
    const betas = exchange.headers["anthropic-beta"];
    const record = records.add({
      format: format.name,
      model: request.model,
      ...(knobs.tag === undefined ? {} : { tag: knobs.tag, body, path: exchange.path, headers: recordedHeaders(exchange.headers), ...(typeof betas === "string" ? { betas } : {}) }),
      ...(typeof requestId === "string" ? { requestId } : {}),
      ...(typeof traceparent === "string" ? { traceparent } : {}),
      arrivedAt: now(),
      tokensWritten: 0,
      tokensAfterClose: 0,
      bytesWritten: 0,
      outcome: "streaming",
    });
    const gone = reply.gone;
    const closed = () => {
      if (!reply.finished && (record.outcome === "streaming" || record.outcome === "stalled")) {
        record.clientClosedAt = now();
        record.outcome = "client_closed";
      }
      record.endedAt ??= now();
      records.touch(record);
    };
    if (gone.aborted) closed();
    else gone.addEventListener("abort", closed, { once: true });

    if (knobs.fail === "reset_before_headers") {
      record.outcome = "failed";
      reply.disconnect("reset");
      return;
    }
    if (!(await pause(knobs.headersMs, gone))) return;
    if (knobs.fail === "status") {
      record.outcome = "failed";
      const headers: Record<string, string> = knobs.retryAfter === undefined ? {} : { "retry-after": String(knobs.retryAfter) };
      replyJson(reply, knobs.status, format.errorBody(knobs.status, `simulated status ${knobs.status}`), headers);
      return;
    }
    // Only a request that is answered reads and writes the cache; a refused one leaves it as it was.
    const cache = request.promptBlocks ? promptCache.use(request.model, request.promptBlocks) : undefined;
    const script: Script = { ...scriptFor(knobs, request), promptCache: cache };
    if (!request.stream) {
      const wait = knobs.ttftMs + knobs.delayMs * Math.max(0, script.steps.length - 1);
      if (!(await pause(wait, gone))) return;
      record.tokensWritten = script.steps.length;
      record.outcome = "completed";
      replyJson(reply, 200, format.completeBody(script, request, `sim-${record.id}`));
      return;
    }
    await streamResponse({ reply, format, request, knobs, script, record, records });
  }

  return {
    records,
    get activeRequests() {
      return active;
    },
    serves: (method, path) => {
      const { pathname } = new URL(path, "http://simulator");
      return formatFor(method, pathname, vertex) !== undefined || embeddingsFor(method, pathname) !== undefined || (method === "POST" && (pathname === GOOGLE_TOKEN_PATH || vertex.embeddingsFor(pathname) !== undefined));
    },
    serve,
    googleOAuth,
    async whenNoRequests(timeoutMs) {
      if (active === 0) return;
      await once(idle, "no-requests", { signal: AbortSignal.timeout(timeoutMs) });
    },
    keysSeen: () => keyCheck?.seen() ?? [],
    reset() {
      records.clear();
      scripts.clear();
      promptCache.clear();
    },
  };
}
