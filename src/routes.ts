import type { DescMethod, DescService } from "@bufbuild/protobuf";
import type { ConnectRouter } from "@connectrpc/connect";
import { Health } from "../gen/grpc/health/v1/health_pb.js";
import { AdminService } from "../gen/sluice/admin/v1/admin_service_pb.js";
import { BatchService } from "../gen/sluice/v1/batch_service_pb.js";
import { ChatService } from "../gen/sluice/v1/chat_service_pb.js";
import { EmbeddingService } from "../gen/sluice/v1/embedding_service_pb.js";
import { ResponsesService } from "../gen/sluice/v1/responses_service_pb.js";
import type { AuditLog } from "./audit/audit-log.js";
import type { AuditTrail } from "./audit/audit-trail.js";
import { createBatchOperations } from "./batch/batch-operations.js";
import type { BatchRunner } from "./batch/batch-runner.js";
import type { BatchStore } from "./batch/batch-store.js";
import type { CacheAdmin } from "./cache/cache-admin.js";
import type { CallLayer } from "./call/call-layer.js";
import type { ReloadCounts } from "./config/live-config.js";
import type { BatchSettings, ConsoleAccess } from "./config/settings.js";
import type { ConsoleAssets } from "./console/console-assets.js";
import { createConsoleRoute } from "./console/console-route.js";
import { clipClientValue, controlCharacterIn } from "./core/client-text.js";
import { GatewayError } from "./core/errors.js";
import { countTokens, messages, sendAnthropicError } from "./edges/anthropic/messages-route.js";
import { sendGoogleError } from "./edges/gemini/gemini-errors.js";
import { geminiModels } from "./edges/gemini/gemini-models.js";
import { geminiModelMethod } from "./edges/gemini/gemini-route.js";
import { createAdminService } from "./edges/grpc/admin-service.js";
import { createBatchService } from "./edges/grpc/batch-service.js";
import { createChatService } from "./edges/grpc/chat-service.js";
import { createEmbeddingService } from "./edges/grpc/embedding-service.js";
import { createHealthService } from "./edges/grpc/health-service.js";
import { registerReflection } from "./edges/grpc/reflection.js";
import { createResponsesService } from "./edges/grpc/responses-service.js";
import { createRpcHandler } from "./edges/grpc/rpc-handler.js";
import type { RequestBodyLimits } from "./edges/grpc/rpc-request.js";
import type { StatsWatch } from "./edges/grpc/watch-stats.js";
import { type BatchRoutes, cancelBatch, checkOpenAiLine, createBatch, deleteFile, fileContent, getBatch, getFile, listBatches, uploadFile } from "./edges/openai/batches.js";
import { chatCompletions, resumeChatCompletion } from "./edges/openai/chat-completions.js";
import { embeddings } from "./edges/openai/embeddings.js";
import { evaluationCsvRoute } from "./edges/openai/evaluation-csv.js";
import { sendOpenAiError } from "./edges/openai/http-errors.js";
import { listModels } from "./edges/openai/models.js";
import { spendCsv } from "./edges/openai/spend-csv.js";
import { cancelResponse, retrieveResponse } from "./edges/responses/background-routes.js";
import type { BackgroundRuns } from "./edges/responses/background-runs.js";
import { conversationRoutes } from "./edges/responses/conversations-route.js";
import { responses } from "./edges/responses/responses-route.js";
import type { SocketLimits } from "./edges/responses/responses-socket.js";
import { createResponsesSocketRoute, responsesSocketOff } from "./edges/responses/socket-route.js";
import { deleteResponse, listInputItems, type StoredRoutesOptions } from "./edges/responses/stored-routes.js";
import type { Evaluations } from "./evaluation/evaluations.js";
import type { ShadowRunner } from "./evaluation/shadow.js";
import type { TenancyObserver } from "./flow/observer.js";
import { type HealthState, untilDraining } from "./health/health-state.js";
import type { Exchange } from "./http/exchange.js";
import { type AnyRequest, type AnyResponse, decodePathSegment, pathOf } from "./http/node-http.js";
import type { SpendReports } from "./ledger/spend-reports.js";
import type { Logger } from "./logging/logger.js";
import type { McpCredentials } from "./mcp/credentials/mcp-credentials.js";
import type { McpOverviewOptions } from "./mcp/mcp-overview.js";
import { openApiDocument } from "./openapi/openapi-document.js";
import { createOpenApiRoute } from "./openapi/openapi-route.js";
import { ADMIN, ADMIN_OR_OPEN_CONSOLE, KEY, OPEN, type Security } from "./openapi/security.js";
import type { StreamRegistry } from "./pipeline/stream-registry.js";
import type { ProviderKeys } from "./provider-keys/provider-keys.js";
import type { ResponseState } from "./response-state/response-state.js";
import type { ResponsesAdmin } from "./response-state/responses-admin.js";
import type { ConnectionGuard } from "./server/connection-guard.js";
import { handleHealth, notFound } from "./server/health.js";
import { serveMetrics } from "./server/metrics-route.js";
import type { Route } from "./server/request-guard.js";
import { createRuntimeStats } from "./server/runtime-stats.js";
import type { Metrics } from "./telemetry/metrics.js";
import type { KeyAdmin } from "./tenancy/key-admin.js";

export interface RoutesOptions {
  readonly calls: CallLayer;
  readonly health: HealthState;
  readonly limits: RequestBodyLimits;
  /** Longest a client may take no bytes before its stream is reset. */
  readonly sendTimeoutMs: number;
  /** Silence on an SSE stream after which a heartbeat is sent. */
  readonly sseKeepaliveMs: number;
  /** sluice.admin.v1.AdminService, when the configuration has an admin key. */
  readonly admin?: KeyAdmin;
  /** AdminService's PurgeCache and GetCacheStats, served with the rest of it. */
  readonly cacheAdmin?: CacheAdmin;
  /** AdminService's ListStoredResponses and PurgeResponses (absent: `responses.store` is false). */
  readonly responsesAdmin?: ResponsesAdmin;
  /** Per-key MCP access tokens (AdminService.SetMcpCredential), when a server has auth.mode per-key. */
  readonly mcpCredentials?: McpCredentials;
  /** Provider API keys set at run time (AdminService.SetProviderKey). */
  readonly providerKeys?: ProviderKeys;
  /** What the console's MCP page reads (AdminService.GetMcpOverview). */
  readonly mcpOverview?: Pick<McpOverviewOptions, "settings" | "upstreams" | "recent" | "ledger">;
  /** AdminService's GetSpendReport and GET /admin/v1/spend.csv, served with the rest of it. */
  readonly reports?: SpendReports;
  /** AdminService's datasets and evaluations, and GET /admin/v1/evaluations/{id}/report.csv. */
  readonly evaluations?: Evaluations;
  /** AdminService's GetShadowReport. */
  readonly shadow?: ShadowRunner;
  /** A key's name from its SHA-256 (configured or runtime): ListAllBatches names each batch's key. */
  readonly keyName?: (sha256: string) => string | undefined;
  /** The audit log AdminService lists and verifies, and the trail its changing calls are recorded in. */
  readonly audit?: { readonly log?: AuditLog; readonly trail: AuditTrail; readonly authFailed?: TenancyObserver["authenticated"] };
  /** AdminService/WatchStats, when the console may be watched. */
  readonly watch?: StatsWatch;
  readonly console: { readonly access: ConsoleAccess; readonly assets: ConsoleAssets };
  /** The Batch API (the facade's /v1/files and /v1/batches, and BatchService): its database, queue and settings (absent: not served). */
  readonly batches?: { readonly store: BatchStore; readonly runner: BatchRunner; readonly settings: BatchSettings };
  /** Stored responses for /v1/responses (config.responses): absent when `responses.store` is false. */
  readonly responseState?: ResponseState;
  /** GET /v1/responses's WebSocket mode (config.responses.websocket*) and the logger of its per-response access lines; absent: 426. */
  readonly responsesSocket?: { readonly websocket: SocketLimits & { readonly enabled: boolean }; readonly logger: Logger };
  /** Background runs of /v1/responses (with `responseState`). */
  readonly responseRuns?: BackgroundRuns;
  /** GET /metrics here (absent when metrics are off or have a listener of their own). */
  readonly metrics?: Metrics;
  /** `/mcp` (edges/mcp/), when `mcp.servers` names any server. */
  readonly mcp?: HttpRoute["serve"];
  /** GET /debug/runtime, when debug endpoints are on. */
  readonly debug?: { readonly registry: StreamRegistry; readonly reloads: () => ReloadCounts; readonly connections: () => ConnectionGuard | undefined };
}

function evaluationReportRoute(admin: KeyAdmin, evaluations: Evaluations): HttpRoute["serve"] {
  return (req, res, exchange, id) => evaluationCsvRoute(req, res, exchange, { admin, evaluations }, id);
}

function spendCsvRoute(admin: KeyAdmin, reports: SpendReports): HttpRoute["serve"] {
  return (req, res, exchange) => spendCsv(req, res, exchange, { admin, reports });
}

/** One HTTP route of the port: method, path (`{id}` marks a segment), what serves it. */
interface HttpRoute {
  readonly method: string;
  readonly path: string;
  readonly edge?: Exchange["edge"];
  /** `id` is the path's first `{id}` ("" without one); `ids` all of them, in order. */
  readonly serve: (req: AnyRequest, res: AnyResponse, exchange: Exchange, id: string, ids: readonly string[]) => Promise<void> | void;
}

/** Stored responses (docs/responses.md): read, list the input items of, and delete a response the caller's key made. */
function storedResponseRoutes(stored: StoredRoutesOptions): HttpRoute[] {
  return [
    { method: "GET", path: "/v1/responses/{id}/input_items", edge: "responses", serve: (req, res, exchange, id) => listInputItems(req, res, exchange, stored, id) },
    { method: "DELETE", path: "/v1/responses/{id}", edge: "responses", serve: (req, res, exchange, id) => deleteResponse(req, res, exchange, stored, id) },
  ];
}

/** The OpenAI Batch API's routes: files and batches (docs/batches.md). */
function batchRoutes(batches: BatchRoutes): HttpRoute[] {
  return [
    { method: "POST", path: "/v1/files", edge: "openai", serve: (req, res, exchange) => uploadFile(req, res, exchange, batches) },
    { method: "GET", path: "/v1/files/{id}", edge: "openai", serve: (req, res, exchange, id) => getFile(req, res, exchange, batches, id) },
    { method: "DELETE", path: "/v1/files/{id}", edge: "openai", serve: (req, res, exchange, id) => deleteFile(req, res, exchange, batches, id) },
    { method: "GET", path: "/v1/files/{id}/content", edge: "openai", serve: (req, res, exchange, id) => fileContent(req, res, exchange, batches, id) },
    { method: "POST", path: "/v1/batches", edge: "openai", serve: (req, res, exchange) => createBatch(req, res, exchange, batches) },
    { method: "GET", path: "/v1/batches", edge: "openai", serve: (req, res, exchange) => listBatches(req, res, exchange, batches) },
    { method: "GET", path: "/v1/batches/{id}", edge: "openai", serve: (req, res, exchange, id) => getBatch(req, res, exchange, batches, id) },
    { method: "POST", path: "/v1/batches/{id}/cancel", edge: "openai", serve: (req, res, exchange, id) => cancelBatch(req, res, exchange, batches, id) },
  ];
}

/** `/a/{id}/b/{id}` against a path: the decoded `{id}` segments (none without one), null when it does not match, undefined when one is malformed. */
function matchPath(pattern: string, path: string): string[] | undefined | null {
  if (!pattern.includes("{id}")) return pattern === path ? [] : null;
  const want = pattern.split("/");
  const got = path.split("/");
  if (want.length !== got.length) return null;
  const segments: string[] = [];
  for (const [i, part] of want.entries()) {
    if (part === "{id}") {
      if (got[i] === "") return null;
      segments.push(got[i]!);
    } else if (part !== got[i]) return null;
  }
  const ids = segments.map(decodePathSegment);
  // An id with a control character (`%00`) names nothing stored: refused here, once, for every route, before a query could be.
  return ids.every((id): id is string => id !== undefined && controlCharacterIn(id) === undefined) ? ids : undefined;
}

/**
 * Every route of the port, in one table, in the order they are tried:
 * the RPC services (gRPC, gRPC-Web and Connect, by their own paths and
 * content types), health, the HTTP edges, then the operator's routes
 * (runtime statistics, the console, metrics). The port (server/) only
 * listens and guards; it knows none of these.
 */
export function createRoutes(options: RoutesOptions): Route {
  const { calls, health, watch, responseState } = options;
  // One set of batch operations behind both edges: a file or batch is checked, stored and run alike whichever way it came.
  const batchOperations = options.batches ? createBatchOperations({ ...options.batches, limits: options.limits, checkLine: checkOpenAiLine(options.limits) }) : undefined;
  // The Connect services registered, each with who may call it: /openapi.json describes them from their descriptors.
  const described: { service: DescService; security: (method: DescMethod) => Security }[] = [];
  const rpc = createRpcHandler({
    routes: (router: ConnectRouter) => {
      router.service(ChatService, createChatService({ calls, maxJsonDepth: options.limits.maxJsonDepth, ...(responseState ? { responseState } : {}) }));
      router.service(EmbeddingService, createEmbeddingService(calls));
      if (batchOperations) router.service(BatchService, createBatchService(calls, batchOperations));
      // Served only where responses are kept (responses.store): elsewhere reflection and Health say it is not here.
      if (responseState) router.service(ResponsesService, createResponsesService(calls, responseState));
      const optional = [...(batchOperations ? [BatchService] : []), ...(responseState ? [ResponsesService] : [])];
      router.service(Health, createHealthService(health, [ChatService.typeName, EmbeddingService.typeName, ...optional.map((s) => s.typeName)]));
      const admin =
        options.admin && options.cacheAdmin && options.reports
          ? createAdminService(options.admin, options.cacheAdmin, options.reports, options.audit, {
              ...(options.evaluations ? { evaluations: options.evaluations } : {}),
              ...(options.shadow ? { shadow: options.shadow } : {}),
              ...(options.batches && options.keyName ? { batches: { store: options.batches.store, keyName: options.keyName } } : {}),
              ...(options.responsesAdmin ? { responses: options.responsesAdmin } : {}),
              ...(options.mcpCredentials ? { mcpCredentials: options.mcpCredentials } : {}),
              ...(options.providerKeys ? { providerKeys: options.providerKeys } : {}),
              ...(options.mcpOverview ? { mcp: options.mcpOverview } : {}),
            })
          : undefined;
      // WatchStats may be served without the rest (an open console with no admin key): the rest then answers UNIMPLEMENTED.
      if (admin || watch) router.service(AdminService, { ...admin, ...(watch ? { watchStats: watch.watchStats } : {}) });
      registerReflection(router, [ChatService, EmbeddingService, ...optional, ...(admin || watch ? [AdminService] : []), Health]);
      described.push(...[ChatService, EmbeddingService, ...optional].map((service) => ({ service, security: () => KEY })), { service: Health, security: () => OPEN });
      if (admin || watch) {
        const watchOpen = options.console.access === "open";
        described.push({ service: AdminService, security: (method) => (method.name === "WatchStats" && watchOpen ? ADMIN_OR_OPEN_CONSOLE : ADMIN) });
      }
    },
    limits: options.limits,
    sendTimeoutMs: options.sendTimeoutMs,
  });
  const edgeOptions = { calls, limits: options.limits, keepaliveMs: options.sseKeepaliveMs, sendTimeoutMs: options.sendTimeoutMs };
  const responsesOptions = { ...edgeOptions, ...(options.responseState ? { state: options.responseState } : {}), ...(options.responseRuns ? { runs: options.responseRuns } : {}) };
  const responsesSocket = options.responsesSocket ? createResponsesSocketRoute({ ...responsesOptions, ...options.responsesSocket, untilDraining: (signal) => untilDraining(health, signal) }) : responsesSocketOff;
  const conversationStore = options.responseState?.conversations;
  const conversations = options.responseState && conversationStore ? { ...options.responseState, conversations: conversationStore } : undefined;
  const openAi = { calls, limits: options.limits, keepaliveMs: options.sseKeepaliveMs, sendTimeoutMs: options.sendTimeoutMs };
  const badId = (field: string, what: string) => new GatewayError("invalid_request", `path: the ${what} has a malformed percent-escape or a control character`, { field });

  // What /openapi.json lists beside the table: the port's handlers after it.
  const fixedRoutes = { metrics: options.metrics !== undefined, debug: options.debug !== undefined, console: options.console.access !== "off" };

  const http: readonly HttpRoute[] = [
    { method: "POST", path: "/v1/chat/completions", edge: "openai", serve: (req, res, exchange) => chatCompletions(req, res, exchange, openAi) },
    {
      method: "GET",
      path: "/v1/chat/completions/{id}/stream",
      edge: "openai",
      // The id of its chunks (chatcmpl-resp_…) or of the stream (resp_…).
      serve: (req, res, exchange, id) => resumeChatCompletion(req, res, exchange, openAi, id.replace(/^chatcmpl-/, "")),
    },
    { method: "POST", path: "/v1/embeddings", edge: "openai", serve: (req, res, exchange) => embeddings(req, res, exchange, openAi) },
    { method: "POST", path: "/v1/messages", edge: "anthropic", serve: (req, res, exchange) => messages(req, res, exchange, edgeOptions) },
    { method: "POST", path: "/v1/messages/count_tokens", edge: "anthropic", serve: (req, res, exchange) => countTokens(req, res, exchange, edgeOptions) },
    { method: "POST", path: "/v1/responses", edge: "responses", serve: (req, res, exchange) => responses(req, res, exchange, responsesOptions) },
    ...(options.responseState ? storedResponseRoutes({ calls, state: options.responseState }) : []),
    // The WebSocket mode (an upgrade; 426 without one, or when it is off).
    { method: "GET", path: "/v1/responses", edge: "responses", serve: responsesSocket },
    ...(conversations ? conversationRoutes({ calls, limits: options.limits, state: conversations }) : []),
    // Read (or, with stream=true, a background run's events replayed) and cancel: background-routes.ts.
    { method: "GET", path: "/v1/responses/{id}", edge: "responses", serve: (req, res, exchange, id) => retrieveResponse(req, res, exchange, responsesOptions, id) },
    { method: "POST", path: "/v1/responses/{id}/cancel", edge: "responses", serve: (req, res, exchange, id) => cancelResponse(req, res, exchange, responsesOptions, id) },
    ...(options.batches && batchOperations ? batchRoutes({ operations: batchOperations, settings: options.batches.settings, calls, limits: options.limits }) : []),
    // The Gemini API (generativelanguage's paths): `{id}` is `model:method`; `/v1/models/…` is the same API's stable prefix (POST only: GET /v1/models is OpenAI's).
    { method: "POST", path: "/v1beta/models/{id}", edge: "gemini", serve: (req, res, exchange, id) => geminiModelMethod(req, res, exchange, edgeOptions, id) },
    { method: "POST", path: "/v1/models/{id}", edge: "gemini", serve: (req, res, exchange, id) => geminiModelMethod(req, res, exchange, edgeOptions, id) },
    { method: "GET", path: "/v1beta/models", edge: "gemini", serve: (req, res, exchange) => geminiModels(req, res, exchange, calls) },
    { method: "GET", path: "/v1beta/models/{id}", edge: "gemini", serve: (req, res, exchange, id) => geminiModels(req, res, exchange, calls, id) },
    { method: "GET", path: "/v1/models", edge: "openai", serve: (req, res, exchange) => listModels(req, res, exchange, calls) },
    { method: "GET", path: "/v1/models/{id}", edge: "openai", serve: (req, res, exchange, id) => listModels(req, res, exchange, calls, id) },
    // MCP streamable HTTP: POST carries JSON-RPC, GET is answered 405 (no server-initiated stream), DELETE ends a session.
    ...(options.mcp ? ["POST", "GET", "DELETE"].map((method) => ({ method, path: "/mcp", edge: "mcp" as const, serve: options.mcp! })) : []),
    ...(options.admin && options.reports ? [{ method: "GET", path: "/admin/v1/spend.csv", serve: spendCsvRoute(options.admin, options.reports) }] : []),
    ...(options.admin && options.evaluations ? [{ method: "GET", path: "/admin/v1/evaluations/{id}/report.csv", serve: evaluationReportRoute(options.admin, options.evaluations) }] : []),
    // This port's OpenAPI description, from this very table and the services above (src/openapi/).
    { method: "GET", path: "/openapi.json", edge: "http", serve: createOpenApiRoute(() => openApiDocument({ routes: http, services: described, fixed: fixedRoutes })) },
  ];
  const idField: Record<string, [string, string]> = {
    "/v1/chat/completions/{id}/stream": ["response_id", "response id"],
    "/v1/models/{id}": ["model", "model id"],
    "/v1beta/models/{id}": ["model", "model id"],
    "/v1/files/{id}": ["file_id", "file id"],
    "/v1/files/{id}/content": ["file_id", "file id"],
    "/v1/batches/{id}": ["batch_id", "batch id"],
    "/v1/responses/{id}": ["response_id", "response id"],
    "/v1/responses/{id}/input_items": ["response_id", "response id"],
    "/v1/batches/{id}/cancel": ["batch_id", "batch id"],
    "/v1/responses/{id}/cancel": ["response_id", "response id"],
    "/admin/v1/evaluations/{id}/report.csv": ["evaluation_id", "evaluation id"],
    "/v1/conversations/{id}": ["conversation_id", "conversation id"],
    "/v1/conversations/{id}/items": ["conversation_id", "conversation id"],
    "/v1/conversations/{id}/items/{id}": ["item_id", "conversation or item id"],
  };

  const runtime = options.debug ? createRuntimeStats(options.debug.registry, options.debug.connections, options.debug.reloads) : () => false;
  const consoleRoute = createConsoleRoute(options.console.access, options.console.assets);
  const { metrics } = options;

  return (req, res, exchange) => {
    const served = rpc(req, res, exchange);
    if (served !== false) return served;
    if (handleHealth(req, res, exchange, health)) return;
    const path = pathOf(req);
    for (const route of http) {
      if (route.method !== req.method) continue;
      const ids = matchPath(route.path, path);
      if (ids === null) continue;
      if (route.edge) exchange.edge = route.edge;
      exchange.route = route.path;
      if (ids === undefined) {
        const [field, what] = idField[route.path]!;
        return (route.edge === "gemini" ? sendGoogleError : sendOpenAiError)(res, exchange, badId(field, what));
      }
      return route.serve(req, res, exchange, ids[0] ?? "", ids);
    }
    if (path.startsWith("/v1beta/")) {
      // A Gemini client on a path not served here (files, cachedContents, tunedModels…) reads Google's error shape.
      exchange.edge = "gemini";
      exchange.route = "other";
      return sendGoogleError(res, exchange, new GatewayError("not_found", `no route ${clipClientValue(req.method ?? "")} ${clipClientValue(path)}`));
    }
    if (path.startsWith("/v1/")) {
      // An SDK on a path not served here (messages.batches, assistants…) reads an error in its own format.
      const anthropic = path.startsWith("/v1/messages");
      exchange.edge = anthropic ? "anthropic" : "openai";
      exchange.route = "other";
      const notServed = new GatewayError("not_found", `no route ${clipClientValue(req.method ?? "")} ${clipClientValue(path)}`);
      return anthropic ? sendAnthropicError(res, exchange, notServed) : sendOpenAiError(res, exchange, notServed);
    }
    if (runtime(req, res, exchange)) return;
    if (consoleRoute(req, res, exchange)) return;
    if (metrics && req.method === "GET" && path === "/metrics") return serveMetrics(metrics, req, res, exchange);
    notFound(res, exchange);
  };
}
