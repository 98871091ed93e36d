import { aggregateDeltas } from "../../core/aggregate.js";
import { GatewayError } from "../../core/errors.js";
import { withHeartbeats } from "../../core/heartbeats.js";
import { requestIdFrom } from "../../core/request-id.js";
import type { ChatPipeline } from "../../pipeline/chat-pipeline.js";
import type { AnyRequest, AnyResponse } from "../../server/health.js";
import { chatRequestFromOpenAi, type OpenAiChatRequest } from "./from-openai.js";
import { toOpenAiError } from "./http-errors.js";
import { readBody, sendJson, write } from "./http-io.js";
import { completionFromResult, createChunkEncoder } from "./to-openai.js";

export interface OpenAiFacadeOptions {
  readonly pipeline: ChatPipeline;
  readonly keepaliveMs: number;
  readonly maxBodyBytes: number;
}

/** Handles a request if it is one of the facade's routes; returns false otherwise. */
export type HttpRoute = (req: AnyRequest, res: AnyResponse) => boolean;

const SSE_HEADERS = {
  "content-type": "text/event-stream; charset=utf-8",
  "cache-control": "no-cache",
  "x-accel-buffering": "no",
};

function sendError(res: AnyResponse, reason: unknown, requestId: string): void {
  const { status, headers, body } = toOpenAiError(reason);
  sendJson(res, status, body, { ...headers, "x-request-id": requestId });
}

/** A signal that aborts with `canceled` when the client goes away before the response is complete. */
function clientGone(res: AnyResponse): AbortSignal {
  const controller = new AbortController();
  res.once("close", () => {
    if (!res.writableFinished) controller.abort(new GatewayError("canceled", "the client closed the connection"));
  });
  return controller.signal;
}

/**
 * Streams deltas as `chat.completion.chunk` events. Headers are committed
 * with the first delta or the first keepalive, whichever comes first: until
 * then a failure is a plain HTTP error with the right status; after it, an
 * SSE error event and no `[DONE]`, so SDKs raise instead of returning a
 * truncated answer.
 */
async function stream(res: AnyResponse, parsed: OpenAiChatRequest, pipeline: ChatPipeline, keepaliveMs: number, requestId: string): Promise<void> {
  const gone = clientGone(res);
  const encoder = createChunkEncoder({ includeUsage: parsed.includeUsage });
  const deltas = pipeline.stream(parsed.request, { signal: gone, requestId, edge: "openai-sse" });
  let committed = false;
  try {
    for await (const item of withHeartbeats(deltas, keepaliveMs)) {
      if (!committed) {
        res.writeHead(200, { ...SSE_HEADERS, "x-request-id": requestId });
        committed = true;
      }
      const text =
        item.type === "heartbeat"
          ? ": keepalive\n\n"
          : encoder
              .encode(item)
              .map((chunk) => `data: ${JSON.stringify(chunk)}\n\n`)
              .join("");
      if (text !== "" && !(await write(res, text, gone))) return;
    }
    if (await write(res, "data: [DONE]\n\n", gone)) res.end();
  } catch (error) {
    if (gone.aborted) return;
    if (!committed) return sendError(res, error, requestId);
    const { body } = toOpenAiError(error);
    if (await write(res, `data: ${JSON.stringify(body)}\n\n`, gone)) res.end();
  }
}

async function complete(res: AnyResponse, parsed: OpenAiChatRequest, pipeline: ChatPipeline, requestId: string): Promise<void> {
  const gone = clientGone(res);
  try {
    const result = await aggregateDeltas(pipeline.stream(parsed.request, { signal: gone, requestId, edge: "openai-json" }));
    sendJson(res, 200, completionFromResult(result), { "x-request-id": requestId });
  } catch (error) {
    if (!gone.aborted) sendError(res, error, requestId);
  }
}

async function chatCompletions(req: AnyRequest, res: AnyResponse, options: OpenAiFacadeOptions): Promise<void> {
  const header = req.headers["x-request-id"];
  const requestId = requestIdFrom(typeof header === "string" ? header : undefined);
  let parsed: OpenAiChatRequest;
  try {
    const raw = await readBody(req, options.maxBodyBytes);
    let json: unknown;
    try {
      json = JSON.parse(raw.toString("utf8"));
    } catch {
      throw new GatewayError("invalid_request", "request body is not valid JSON");
    }
    parsed = chatRequestFromOpenAi(json);
  } catch (error) {
    // An oversized body is left unread: close the connection rather than drain it.
    if (error instanceof GatewayError && error.code === "payload_too_large" && "shouldKeepAlive" in res) res.shouldKeepAlive = false;
    return sendError(res, error, requestId);
  }
  if (parsed.stream) await stream(res, parsed, options.pipeline, options.keepaliveMs, requestId);
  else await complete(res, parsed, options.pipeline, requestId);
}

function listModels(res: AnyResponse, pipeline: ChatPipeline, id?: string): void {
  const models = [...pipeline.models.values()].map((route) => ({ id: route.alias, object: "model", created: 0, owned_by: route.provider.name }));
  if (id === undefined) return sendJson(res, 200, { object: "list", data: models });
  const model = models.find((m) => m.id === id);
  if (model) return sendJson(res, 200, model);
  const requestId = requestIdFrom(undefined);
  sendError(res, new GatewayError("unknown_model", `unknown model "${id}": not configured on this gateway`, { field: "model" }), requestId);
}

/**
 * The OpenAI-compatible facade: `POST /v1/chat/completions` (streaming or
 * not) and `GET /v1/models`, on the same pipeline as the gRPC service.
 */
export function createOpenAiFacade(options: OpenAiFacadeOptions): HttpRoute {
  return (req, res) => {
    const path = (req.url ?? "/").split("?")[0]!;
    if (!path.startsWith("/v1/")) return false;
    if (path === "/v1/chat/completions" && req.method === "POST") {
      chatCompletions(req, res, options).catch((error: unknown) => {
        if (!res.headersSent) sendError(res, error, requestIdFrom(undefined));
        else res.destroy();
      });
    } else if (path === "/v1/models" && req.method === "GET") {
      listModels(res, options.pipeline);
    } else if (path.startsWith("/v1/models/") && req.method === "GET") {
      listModels(res, options.pipeline, decodeURIComponent(path.slice("/v1/models/".length)));
    } else {
      sendJson(res, 404, { error: { message: `no route ${req.method} ${path}`, type: "invalid_request_error", param: null, code: "not_found" } });
    }
    return true;
  };
}
