import { EventEmitter, once } from "node:events";
import { STATUS_CODES } from "node:http";
import { Dispatcher, errors } from "undici";
import { replyJson, type SimExchange, type SimReply } from "./exchange.js";
import { type Simulator, type SimulatorStats, vertexSurface } from "./server.js";
import { createSimulation } from "./simulation.js";

/**
 * The simulator without a socket: an undici Dispatcher that hands each
 * request to the same simulation the socket server runs, so the same
 * scripts and knobs serve a test in memory or over loopback. Whatever the
 * origin of a request, it reaches this simulator; the base URLs below only
 * give provider configurations something to name.
 */
/** The socket simulator's surface, plus the dispatcher that stands for its socket (`openConnections`: exchanges not over yet). */
export interface InProcessSimulator extends Simulator {
  /** For undici's `request(url, { dispatcher })`, or createUpstreamClient({ dispatcher }). */
  readonly dispatcher: Dispatcher;
}

type Handler = Dispatcher.DispatchHandler;

/** A TCP reset as Node reports it; undici hands it on as is. */
function connectionReset(): Error {
  return Object.assign(new Error("read ECONNRESET"), { code: "ECONNRESET", errno: -104, syscall: "read" });
}

function headersOf(raw: Dispatcher.DispatchOptions["headers"]): Record<string, string | string[] | undefined> {
  const out: Record<string, string | string[] | undefined> = {};
  if (!raw) return out;
  if (Array.isArray(raw)) {
    for (let i = 0; i + 1 < raw.length; i += 2) out[String(raw[i]).toLowerCase()] = raw[i + 1];
    return out;
  }
  const entries: Iterable<[string, string | string[] | undefined]> = Symbol.iterator in raw ? (raw as Iterable<[string, string | string[] | undefined]>) : Object.entries(raw);
  for (const [name, value] of entries) out[name.toLowerCase()] = value;
  return out;
}

function bodyOf(body: Dispatcher.DispatchOptions["body"]): string | undefined {
  if (body === null || body === undefined) return "";
  if (typeof body === "string") return body;
  if (body instanceof Uint8Array) return Buffer.from(body.buffer, body.byteOffset, body.byteLength).toString("utf8");
  return undefined;
}

/**
 * One request through undici's handler protocol (the one its own clients
 * drive: onConnect, onHeaders, onData, onComplete, onError). `onData`
 * returning false is the reader's buffer full: the simulation waits for
 * `resume`, as a server waits for its socket to drain. The abort undici is
 * given (the body destroyed, the request's signal) ends the exchange: the
 * simulation sees its client leave, as when a socket closes.
 */
function exchangeOf(options: Dispatcher.DispatchOptions, handler: Handler): { exchange: SimExchange; fail(error: Error): void; over: Promise<void> } {
  const gone = new AbortController();
  let state: "open" | "finished" | "failed" = "open";
  let errored = false;
  let paused = false;
  let wake: (() => void) | undefined;
  const ended = new EventEmitter();
  const over = once(ended, "over").then(() => undefined);

  const close = (next: "finished" | "failed") => {
    state = next;
    gone.abort();
    wake?.();
    ended.emit("over");
  };
  const error = (reason: Error) => {
    if (errored) return;
    errored = true;
    handler.onError?.(reason);
  };
  const fail = (reason: Error) => {
    if (state !== "open") return;
    close("failed");
    error(reason);
  };
  const resume = () => {
    paused = false;
    wake?.();
  };

  const reply: SimReply = {
    gone: gone.signal,
    get finished() {
      return state === "finished";
    },
    get closed() {
      return state !== "open";
    },
    head(status, headers) {
      if (state !== "open") return;
      const raw = Object.entries(headers).flatMap(([name, value]) => [Buffer.from(name), Buffer.from(String(value))]);
      handler.onHeaders?.(status, raw, resume, STATUS_CODES[status] ?? "");
    },
    write(bytes) {
      if (state !== "open") return false;
      if (handler.onData?.(bytes) !== false) return true;
      paused = true;
      return false;
    },
    drained() {
      if (state !== "open") return Promise.resolve(false);
      if (!paused) return Promise.resolve(true);
      return new Promise((resolve) => {
        wake = () => {
          wake = undefined;
          resolve(state === "open");
        };
      });
    },
    end(bytes) {
      if (state !== "open") return;
      if (bytes) handler.onData?.(bytes);
      handler.onComplete?.([]);
      close("finished");
    },
    disconnect(how) {
      if (state !== "open") return;
      close("failed");
      // After the reader took what was already handed over, as bytes ahead of a FIN or RST arrive first.
      setImmediate(() => error(how === "reset" ? connectionReset() : new errors.SocketError("other side closed")));
    },
  };

  const body = bodyOf(options.body);
  const exchange: SimExchange = {
    method: options.method,
    path: options.path,
    headers: headersOf(options.headers),
    readBody: () => (body === undefined ? Promise.reject(new Error("in-process simulator: body must be a string or bytes")) : Promise.resolve(body)),
    reply,
  };
  handler.onConnect?.((reason) => fail(reason ?? new errors.RequestAbortedError()));
  return { exchange, fail, over };
}

export function createInProcessSimulator(): InProcessSimulator {
  const simulation = createSimulation();
  const open = new Set<(error: Error) => void>();
  const idle = new EventEmitter();
  const stats = (): SimulatorStats => ({ openConnections: open.size, activeRequests: simulation.activeRequests, totalRequests: simulation.records.all().length });

  const dispatcher = new Dispatcher();
  dispatcher.dispatch = (options, handler) => {
    if (!handler.onConnect || !handler.onHeaders || !handler.onData || !handler.onComplete || !handler.onError) {
      // undici's request() and its own clients use these; a handler of the newer controller API alone is not served.
      throw new errors.InvalidArgumentError("in-process simulator: the handler must implement onConnect, onHeaders, onData, onComplete and onError");
    }
    const { exchange, fail, over } = exchangeOf(options, handler);
    if (exchange.reply.closed) return true;
    open.add(fail);
    void over.then(() => {
      open.delete(fail);
      if (open.size === 0) idle.emit("idle");
    });
    const { method, path } = exchange;
    if (!simulation.serves(method, path)) {
      replyJson(exchange.reply, 404, { error: { message: `no route ${method} ${new URL(path, "http://simulator").pathname}`, type: "not_found" } });
      return true;
    }
    simulation.serve(exchange).catch((error: unknown) => fail(new errors.SocketError(`in-process simulator failed: ${error instanceof Error ? error.message : String(error)}`)));
    return true;
  };

  const origin = "http://simulator.in-process";
  return {
    origin,
    openAiBaseUrl: `${origin}/v1`,
    anthropicBaseUrl: `${origin}/v1`,
    geminiBaseUrl: `${origin}/v1beta`,
    // The token endpoint is served too, but google-auth-library fetches tokens with its own client: Vertex needs the socket simulator.
    ...vertexSurface(origin, simulation),
    azureBaseUrl: `${origin}/openai`,
    bedrockBaseUrl: origin,
    records: simulation.records,
    keysSeen: () => simulation.keysSeen(),
    dispatcher,
    stats,
    async whenNoConnections(timeoutMs) {
      if (open.size === 0) return;
      await once(idle, "idle", { signal: AbortSignal.timeout(timeoutMs) });
    },
    async close() {
      for (const fail of [...open]) fail(new errors.SocketError("other side closed"));
    },
  };
}
