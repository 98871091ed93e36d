import type { WebSocket } from "ws";
import { type CallItem, type CallLayer, deltaOf } from "../../call/call-layer.js";
import type { Delta } from "../../core/delta.js";
import type { Feed } from "../../core/delta-sink.js";
import { GatewayError, toGatewayError } from "../../core/errors.js";
import { replayForTarget } from "../../core/replay-origins.js";
import { requestIdFrom } from "../../core/request-id.js";
import type { StructureLimits } from "../../core/structure-limits.js";
import type { Exchange } from "../../http/exchange.js";
import { parseJsonBody } from "../../http/read-json.js";
import type { Logger } from "../../logging/logger.js";
import { isResponseId, type JsonObject, newResponseId } from "../../response-state/response-ids.js";
import type { ResponseState } from "../../response-state/response-state.js";
import type { Principal } from "../../tenancy/principal.js";
import { type ResponsesRequest, responsesRequestFrom } from "./from-responses.js";
import { keepResponse } from "./keep-response.js";
import { toResponsesError } from "./responses-errors.js";
import { createSocketTurns } from "./socket-turns.js";
import { createResponseEncoder, type ResponseEncoder } from "./to-responses.js";

/** The WebSocket mode's limits (config.responses.websocket*). */
export interface SocketLimits {
  /** A socket with no response running that receives nothing for this long is closed. */
  readonly idleMs: number;
  /** Events a socket may hold unsent; past it the response is cancelled and the socket dropped. */
  readonly maxBufferedBytes: number;
  /** Conversation bytes a socket keeps for `previous_response_id` (socket-turns.ts). */
  readonly maxStateBytes: number;
}

export interface SocketConnection {
  readonly calls: CallLayer;
  readonly limits: StructureLimits;
  readonly socket: SocketLimits;
  /** Silence during a response after which a WebSocket ping is sent. */
  readonly keepaliveMs: number;
  /** Longest a response waits for a client that stopped reading before it is cancelled. */
  readonly sendTimeoutMs: number;
  readonly state?: ResponseState;
  readonly logger: Logger;
  /** The upgrade request: its key, tags, trace and address serve every response of the socket. */
  readonly principal?: Principal;
  readonly exchange: Exchange;
  readonly tags: Readonly<Record<string, string>>;
  /** Resolves when the gateway starts to drain (or `signal` aborts): the socket then leaves once its response ends. */
  readonly untilDraining?: (signal: AbortSignal) => Promise<void>;
}

/** Buffered bytes past which a response waits for the client to read (the upstream pauses), as the SSE writer waits for `drain`. */
const PAUSE_BYTES = 64 * 1024;

/** RFC 6455 §7.4.1: an idle socket is closed normally (a client that stops reading is dropped: it would not read a close frame either). */
const CLOSE_NORMAL = 1000;
/** RFC 6455 §7.4.1 "going away": a draining gateway closes its sockets so that clients reconnect to another replica at once. */
const CLOSE_GOING_AWAY = 1001;

/** Fields of `response.create` that belong to the transport or to this socket, not to the request the edge decodes. */
const SOCKET_FIELDS = new Set(["type", "previous_response_id", "store", "stream", "generate", "background"]);

/** An `error` event outside a response: the HTTP status the same failure has on POST (Codex reads `status`), and OpenAI's error object. */
function errorFrame(reason: unknown, param?: (field: string) => string, code?: string): string {
  const { status, body } = toResponsesError(reason, param);
  const error = code === undefined ? body.error : { ...body.error, code };
  return JSON.stringify({ type: "error", status, code: error.code, message: error.message, param: error.param, error });
}

const invalid = (message: string, field?: string) => new GatewayError("invalid_request", message, field === undefined ? {} : { field });

/**
 * One Responses WebSocket (docs/responses.md, "WebSocket mode"): text
 * messages `{"type": "response.create", …the POST body}` each answered by
 * the same events the SSE edge sends, one JSON message each, through the
 * same call layer (key, limits, budget, ledger, telemetry), with an access
 * line per response. One response at a time: a `response.create` while one
 * runs is refused with an `error` event and starts nothing.
 * `previous_response_id` continues a response this socket made, from
 * memory (socket-turns.ts), whatever its `store`; else, where responses are
 * stored, one the key stored. A failed message never closes the socket; a
 * message over the body limit does (1009, by `ws`), a client that stops
 * reading does (its response cancelled), and so does idleness. A drain
 * closes the socket with 1001 once nothing runs on it: a socket kept open
 * with nothing running would otherwise hold the drain until its grace.
 */
export function serveResponsesSocket(ws: WebSocket, connection: SocketConnection): void {
  const { calls, logger, exchange } = connection;
  const turns = createSocketTurns(connection.socket.maxStateBytes);
  let running: { readonly controller: AbortController; feed?: Feed } | undefined;
  let idleTimer: NodeJS.Timeout | undefined;
  let closed = false;
  let leaving = false;
  let served = 0;
  const life = new AbortController();

  const drop = (why: string) => {
    if (closed) return;
    closed = true;
    logger.info({ event: "responses.socket_dropped", requestId: exchange.requestId, why });
    ws.terminate();
  };
  /** Sends one message; false once the socket holds more than it may (it is then dropped). */
  const send = (frame: string, written?: (error?: Error) => void): boolean => {
    if (closed) return false;
    ws.send(frame, written);
    if (ws.bufferedAmount <= connection.socket.maxBufferedBytes) return true;
    running?.controller.abort(new GatewayError("canceled", "the client stopped reading: more than responses.websocketMaxBufferedBytes unsent"));
    drop("buffered");
    return false;
  };
  const leaveIfIdle = () => {
    if (!leaving || running || closed) return;
    closed = true;
    clearTimeout(idleTimer);
    ws.close(CLOSE_GOING_AWAY, "the gateway is shutting down");
  };
  void connection.untilDraining?.(life.signal).then(() => {
    if (life.signal.aborted) return;
    leaving = true;
    leaveIfIdle();
  });
  const armIdle = () => {
    clearTimeout(idleTimer);
    leaveIfIdle();
    if (running || closed) return;
    idleTimer = setTimeout(() => {
      if (running || closed) return;
      closed = true;
      ws.close(CLOSE_NORMAL, "idle");
    }, connection.socket.idleMs);
    idleTimer.unref();
  };

  ws.on("message", (data, isBinary) => {
    armIdle();
    const raw = Array.isArray(data) ? Buffer.concat(data) : Buffer.isBuffer(data) ? data : Buffer.from(data);
    let message: Record<string, unknown>;
    try {
      if (isBinary) throw invalid("binary messages are not served: send JSON text messages");
      const parsed = parseJsonBody(raw, connection.limits);
      if (parsed === null || typeof parsed !== "object" || Array.isArray(parsed)) throw invalid("message: must be a JSON object");
      message = parsed as Record<string, unknown>;
    } catch (error) {
      send(errorFrame(error));
      return;
    }
    // Codex acknowledges each response it has handled; there is nothing to do with it.
    if (message.type === "response.processed") return;
    if (message.type !== "response.create") {
      send(errorFrame(invalid('type: must be "response.create"', "type")));
      return;
    }
    if (running) {
      send(errorFrame(new GatewayError("already_exists", "a response is already running on this socket: wait for its last event, or open another socket"), undefined, "response_already_in_flight"));
      return;
    }
    const controller = new AbortController();
    running = { controller };
    clearTimeout(idleTimer);
    void respond(message, raw.length, controller).finally(() => {
      running = undefined;
      armIdle();
    });
  });
  ws.on("close", () => {
    closed = true;
    life.abort();
    clearTimeout(idleTimer);
    running?.controller.abort(new GatewayError("canceled", "the client closed the WebSocket"));
    running?.feed?.cancel(new GatewayError("canceled", "the client closed the WebSocket"));
  });
  // A message over maxPayload (closed 1009 by ws), a bad frame: ws closes the socket itself; unheard, the error would throw.
  ws.on("error", (error) => logger.debug({ event: "responses.socket_error", requestId: exchange.requestId, err: error }));
  armIdle();

  /** The conversation before this request: this socket's memory, else the key's stored chain; where it came from goes on the access line. */
  async function earlier(previous: unknown, fields: Record<string, unknown>): Promise<readonly JsonObject[] | undefined> {
    if (previous === undefined || previous === null) return [];
    if (typeof previous !== "string") throw invalid("previous_response_id: must be a string", "previous_response_id");
    const kept = turns.conversation(previous);
    if (kept) {
      fields.continued = "socket";
      return kept;
    }
    const { state } = connection;
    if (!state || !isResponseId(previous)) return undefined;
    const chain = await state.store.chain(previous, connection.principal?.id ?? "", state.settings().maxChainDepth);
    if (chain) fields.continued = "store";
    return chain?.flatMap((r) => [...r.input, ...((r.response.output as JsonObject[] | undefined) ?? [])]);
  }

  async function respond(message: Record<string, unknown>, bytes: number, controller: AbortController): Promise<void> {
    const requestId = requestIdFrom(undefined);
    const startedAt = performance.now();
    // The key's name, as identify set it on the upgrade's line.
    const fields: Record<string, unknown> = exchange.fields.key === undefined ? {} : { key: exchange.fields.key };
    let code: string | undefined;
    // On the upgrade's access line, written when the socket closes.
    exchange.fields.responses = ++served;
    try {
      if (message.background === true) throw invalid("background: not served over a WebSocket (responses stream on the socket)", "background");
      const before = await earlier(message.previous_response_id, fields);
      if (before === undefined) {
        code = "not_found";
        send(errorFrame(new GatewayError("not_found", "previous_response_id: no such response on this socket or stored for this key", { field: "previous_response_id" }), undefined, "previous_response_not_found"));
        return;
      }
      const body: Record<string, unknown> = {};
      for (const [key, value] of Object.entries(message)) if (!SOCKET_FIELDS.has(key)) body[key] = value;
      const input = body.input;
      const own: readonly unknown[] = typeof input === "string" ? [{ type: "message", role: "user", content: input }] : Array.isArray(input) ? input : [];
      if (input !== undefined && typeof input !== "string" && !Array.isArray(input)) throw invalid("input: must be a string or an array of items", "input");
      const conversation = [...before, ...(own as JsonObject[])];
      const parsed = responsesRequestFrom({ ...body, input: conversation }, connection.limits);
      const encoder = createResponseEncoder({ requestModel: parsed.request.model, echo: parsed.echo, param: parsed.param, calls: parsed.calls, frames: "json" });
      if (message.generate === false) {
        fields.alias = parsed.request.model;
        fields.generate = false;
        code = warm(parsed, encoder, conversation, bytes);
        return;
      }
      // Kept as over HTTP where responses are stored (store absent means true): continued from the store, it links to its
      // chain; continued from this socket's memory, whose turns the store never saw, it keeps the whole conversation itself.
      const keep = connection.state !== undefined && message.store !== false ? (fields.continued === "store" ? { input: own, previousId: message.previous_response_id as string } : { input: conversation }) : undefined;
      code = await stream(parsed, encoder, conversation, bytes, { requestId, controller, fields, keep });
    } catch (error) {
      code = toGatewayError(error).code;
      send(errorFrame(error));
    } finally {
      logger.info({
        event: "access",
        requestId,
        edge: "responses",
        route: "/v1/responses",
        method: "GET",
        transport: "websocket",
        socket: exchange.requestId,
        code: code ?? (controller.signal.aborted ? "canceled" : undefined),
        durationMs: Math.round((performance.now() - startedAt) * 10) / 10,
        ...exchange.traceIds(),
        ...fields,
      });
    }
  }

  /** `generate: false`: no model call; the conversation is kept under a new id a later turn continues (OpenAI's warm-up). */
  function warm(parsed: ResponsesRequest, encoder: ResponseEncoder, conversation: readonly JsonObject[], bytes: number): string {
    calls.checkAlias(connection.principal, parsed.request.model);
    const push = (frame: string) => void send(frame);
    const id = newResponseId();
    encoder.events({ type: "start", responseId: id, provider: "", model: "" }, push);
    encoder.events({ type: "finish", reason: "stop" }, push);
    turns.keep(id, conversation, bytes);
    return "ok";
  }

  /** One response through the call layer, its events sent as the client reads them. */
  function stream(
    parsed: ResponsesRequest,
    encoder: ResponseEncoder,
    conversation: readonly JsonObject[],
    bytes: number,
    call: {
      readonly requestId: string;
      readonly controller: AbortController;
      readonly fields: Record<string, unknown>;
      /** What the store keeps of it, when it is kept. */
      readonly keep?: { readonly input: readonly unknown[]; readonly previousId?: string };
    },
  ): Promise<string> {
    const { controller } = call;
    const cs = calls.stream(
      parsed.request,
      connection.principal,
      { requestId: call.requestId, edge: "responses-ws", signal: controller.signal, trace: exchange.trace(), fields: call.fields, tags: connection.tags, remote: exchange.remote },
      {
        heartbeatMs: connection.keepaliveMs,
        ...(parsed.gatewayTools ? { gatewayTools: parsed.gatewayTools } : {}),
        prepare: async (request, target) => replayForTarget(request, parsed.origins, { provider: target.provider.name, model: target.model }, parsed.request.messages),
      },
    );
    let started = false;
    let responseId = "";
    let waiting = false;
    let sendTimer: NodeJS.Timeout | undefined;
    return new Promise<string>((resolve) => {
      const push = (frame: string) => void send(frame);
      /** After the last message of a read: pause the call while the client has more than PAUSE_BYTES unread, for at most sendTimeoutMs. */
      const credit = (): boolean => {
        if (closed) return false;
        if (ws.bufferedAmount < Math.min(PAUSE_BYTES, connection.socket.maxBufferedBytes)) return true;
        if (waiting) return false;
        waiting = true;
        sendTimer = setTimeout(() => {
          const error = new GatewayError("canceled", `the client read nothing for ${connection.sendTimeoutMs} ms (server.sendTimeoutMs)`);
          controller.abort(error);
          feed.cancel(error);
          drop("send_timeout");
        }, connection.sendTimeoutMs);
        const drained = () => {
          if (closed || ws.bufferedAmount >= Math.min(PAUSE_BYTES, connection.socket.maxBufferedBytes)) return;
          clearTimeout(sendTimer);
          waiting = false;
          feed.resume();
        };
        // ws calls back once this ping, and so everything queued before it, is written to the socket.
        ws.ping(undefined, undefined, drained);
        return false;
      };
      const feed: Feed = cs.relay({
        push(item: CallItem, more) {
          if (closed) return false;
          const delta: Delta | { type: "heartbeat" } = deltaOf(item);
          if (delta.type === "heartbeat") {
            ws.ping();
            return credit();
          }
          if (delta.type === "start") {
            started = true;
            responseId = delta.responseId;
          }
          cs.observe?.(delta as Delta);
          encoder.events(delta as Delta, push);
          return more ? !waiting : credit();
        },
        end(error) {
          clearTimeout(sendTimer);
          if (error) {
            if (!closed) {
              if (started) encoder.failedEvents(error, push);
              else send(errorFrame(error, parsed.param));
            }
            resolve(error.code);
            return;
          }
          const response = encoder.response();
          if (started && response.status !== "failed") {
            const output = response.output as unknown as JsonObject[];
            turns.keep(responseId, [...conversation, ...output], bytes + Buffer.byteLength(JSON.stringify(output)));
          }
          const { state } = connection;
          if (!call.keep || !state || !started) return resolve("ok");
          // The socket's next message waits for the put, so a turn continued from the store (any replica) finds it.
          void keepResponse(state, response, { owner: connection.principal?.id ?? "", ...call.keep }, call.requestId).then(() => resolve("ok"));
        },
      });
      running = { controller, feed };
      controller.signal.addEventListener("abort", () => feed.cancel(toGatewayError(controller.signal.reason)), { once: true });
    });
  }
}
