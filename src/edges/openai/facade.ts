import { aggregateDeltas } from "../../core/aggregate.js";
import { clipClientValue } from "../../core/client-text.js";
import { GatewayError, toGatewayError } from "../../core/errors.js";
import { withHeartbeats } from "../../core/heartbeats.js";
import { scanJson } from "../../core/json-scan.js";
import type { StructureLimits } from "../../core/structure-limits.js";
import type { Exchange } from "../../http/exchange.js";
import { type AnyRequest, type AnyResponse, decodePathSegment, pathOf, sendJson, writeChunk } from "../../http/node-http.js";
import { type BodyLimits, readBody } from "../../http/read-body.js";
import { writable } from "../../http/writable.js";
import type { ChatPipeline } from "../../pipeline/chat-pipeline.js";
import { chatRequestFromOpenAi, type OpenAiChatRequest } from "./from-openai.js";
import { toOpenAiError } from "./http-errors.js";
import { completionFromResult, createChunkEncoder } from "./to-openai.js";

export interface OpenAiFacadeOptions {
  readonly pipeline: ChatPipeline;
  readonly keepaliveMs: number;
  readonly limits: BodyLimits & StructureLimits;
  /** Longest a client may take no bytes before its stream is reset. */
  readonly sendTimeoutMs: number;
}

/** Serves the facade's routes; false for paths outside /v1/. */
export type FacadeRoute = (req: AnyRequest, res: AnyResponse, exchange: Exchange) => Promise<void> | void | false;

const SSE_HEADERS = {
  "content-type": "text/event-stream; charset=utf-8",
  "cache-control": "no-cache",
  "x-accel-buffering": "no",
};

function sendError(res: AnyResponse, exchange: Exchange, reason: unknown): void {
  const error = toGatewayError(reason);
  exchange.code = error.code;
  // A body refused half-way is left unread: close the connection rather than drain it.
  if ((error.code === "payload_too_large" || error.code === "request_timeout") && "shouldKeepAlive" in res) res.shouldKeepAlive = false;
  const { status, headers, body } = toOpenAiError(error);
  sendJson(res, status, body, headers);
}

/**
 * Streams deltas as `chat.completion.chunk` events. Headers are committed
 * with the first delta or the first keepalive, whichever comes first: until
 * then a failure is a plain HTTP error with the right status; after it, an
 * SSE error event and no `[DONE]`, so SDKs raise instead of returning a
 * truncated answer.
 */
async function stream(res: AnyResponse, exchange: Exchange, parsed: OpenAiChatRequest, options: OpenAiFacadeOptions): Promise<void> {
  const encoder = createChunkEncoder({ includeUsage: parsed.includeUsage });
  const deltas = options.pipeline.stream(parsed.request, { signal: exchange.signal, requestId: exchange.requestId, edge: "openai-sse" });
  let committed = false;
  try {
    for await (const item of withHeartbeats(deltas, options.keepaliveMs)) {
      if (!committed) {
        res.writeHead(200, SSE_HEADERS);
        committed = true;
      }
      let text = "";
      if (item.type === "heartbeat") text = ": keepalive\n\n";
      else for (const chunk of encoder.encode(item)) text += `data: ${JSON.stringify(chunk)}\n\n`;
      if (text !== "" && !writeChunk(res, text)) await writable(res, exchange, options.sendTimeoutMs);
    }
    exchange.code = "ok";
    res.end("data: [DONE]\n\n");
  } catch (error) {
    if (exchange.signal.aborted) return;
    if (!committed) return sendError(res, exchange, error);
    const { body } = toOpenAiError(error);
    exchange.code = toGatewayError(error).code;
    res.end(`data: ${JSON.stringify(body)}\n\n`);
  }
}

async function complete(res: AnyResponse, exchange: Exchange, parsed: OpenAiChatRequest, pipeline: ChatPipeline): Promise<void> {
  try {
    const result = await aggregateDeltas(pipeline.stream(parsed.request, { signal: exchange.signal, requestId: exchange.requestId, edge: "openai-json" }));
    exchange.code = "ok";
    sendJson(res, 200, completionFromResult(result));
  } catch (error) {
    if (!exchange.signal.aborted) sendError(res, exchange, error);
  }
}

async function chatCompletions(req: AnyRequest, res: AnyResponse, exchange: Exchange, options: OpenAiFacadeOptions): Promise<void> {
  let parsed: OpenAiChatRequest;
  try {
    const raw = await readBody(req, options.limits);
    // Count and measure before parsing: JSON.parse and validation cost grows
    // with the number of values, and a hostile body must not buy that time.
    scanJson(raw, options.limits);
    let json: unknown;
    try {
      json = JSON.parse(raw.toString("utf8"));
    } catch {
      throw new GatewayError("invalid_request", "request body is not valid JSON");
    }
    parsed = chatRequestFromOpenAi(json, options.limits);
  } catch (error) {
    return sendError(res, exchange, error);
  }
  if (parsed.stream) await stream(res, exchange, parsed, options);
  else await complete(res, exchange, parsed, options.pipeline);
}

function listModels(res: AnyResponse, exchange: Exchange, pipeline: ChatPipeline, id?: string): void {
  const models = [...pipeline.models.values()].map((route) => ({ id: route.alias, object: "model", created: 0, owned_by: route.provider.name }));
  if (id === undefined) {
    exchange.code = "ok";
    return sendJson(res, 200, { object: "list", data: models });
  }
  const model = models.find((m) => m.id === id);
  if (!model) return sendError(res, exchange, new GatewayError("unknown_model", `unknown model ${JSON.stringify(clipClientValue(id))}: not configured on this gateway`, { field: "model" }));
  exchange.code = "ok";
  sendJson(res, 200, model);
}

/**
 * The OpenAI-compatible facade: `POST /v1/chat/completions` (streaming or
 * not) and `GET /v1/models[/{id}]`, on the same pipeline as the gRPC service.
 */
export function createOpenAiFacade(options: OpenAiFacadeOptions): FacadeRoute {
  return (req, res, exchange) => {
    const path = pathOf(req);
    if (!path.startsWith("/v1/")) return false;
    exchange.edge = "openai";
    if (path === "/v1/chat/completions" && req.method === "POST") {
      exchange.route = path;
      return chatCompletions(req, res, exchange, options);
    }
    if (path === "/v1/models" && req.method === "GET") {
      exchange.route = path;
      return listModels(res, exchange, options.pipeline);
    }
    if (path.startsWith("/v1/models/") && req.method === "GET") {
      exchange.route = "/v1/models/{id}";
      const id = decodePathSegment(path.slice("/v1/models/".length));
      if (id === undefined) return sendError(res, exchange, new GatewayError("invalid_request", "path: malformed percent-escape in the model id", { field: "model" }));
      return listModels(res, exchange, options.pipeline, id);
    }
    exchange.route = "other";
    exchange.code = "not_found";
    sendJson(res, 404, {
      error: { message: `no route ${clipClientValue(req.method ?? "")} ${clipClientValue(path)}`, type: "invalid_request_error", param: null, code: "not_found" },
    });
  };
}
