import { EventEmitter, once } from "node:events";
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo, Socket } from "node:net";
import type { SimExchange, SimReply } from "./exchange.js";
import { GOOGLE_TOKEN_PATH, type ServiceAccountKey, type ServiceAccountOptions } from "./google-oauth.js";
import type { RecordBook, RequestRecord } from "./records.js";
import { createSimulation, type Simulation } from "./simulation.js";

export interface SimulatorOptions {
  readonly host?: string;
  /** 0 picks a free port. */
  readonly port?: number;
  /** The only bearer keys the OpenAI wire accepts (others: 401), and `keysSeen` lists what was sent; unset: no key check. */
  readonly acceptKeys?: readonly string[];
}

export interface SimulatorStats {
  readonly openConnections: number;
  readonly activeRequests: number;
  readonly totalRequests: number;
}

/** A running upstream simulator. */
export interface Simulator {
  /** Base URL of the OpenAI-compatible API, e.g. http://127.0.0.1:1234/v1 */
  readonly openAiBaseUrl: string;
  /** Base URL of the Anthropic Messages API (…/v1). */
  readonly anthropicBaseUrl: string;
  /** Base URL of the Gemini API (…/v1beta). */
  readonly geminiBaseUrl: string;
  /** Base URL of Vertex AI for project `sim-project` in `us-central1` (…/v1/projects/sim-project/locations/us-central1). */
  readonly vertexBaseUrl: string;
  /** Google's OAuth token endpoint, as the simulator's service-account keys name it (`token_uri`). */
  readonly googleTokenUrl: string;
  /** A new service account (a key pair made now) whose key file's `token_uri` is googleTokenUrl; the Vertex paths accept the tokens it is issued. */
  googleServiceAccount(options?: ServiceAccountOptions): ServiceAccountKey;
  /** Token requests a service account has made: a cached token reused, or refreshed. */
  googleTokenRequests(email: string): number;
  /** Base URL of an Azure OpenAI resource (…/openai): deployments, `api-version`, the `api-key` header. */
  readonly azureBaseUrl: string;
  /** Bedrock runtime: `/model/{modelId}/converse-stream` under the origin, SigV4-checked against SIMULATED_AWS_CREDENTIALS. */
  readonly bedrockBaseUrl: string;
  readonly origin: string;
  readonly records: RecordBook;
  /** The keys the OpenAI wire was sent, refused ones included, when started with `acceptKeys`. */
  keysSeen(): readonly string[];
  stats(): SimulatorStats;
  /** Resolves once no client connection is open (now or later); rejects after `timeoutMs`. */
  whenNoConnections(timeoutMs: number): Promise<void>;
  close(): Promise<void>;
}

const MAX_BODY_BYTES = 16 * 1024 * 1024;

async function readBody(req: IncomingMessage): Promise<string> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > MAX_BODY_BYTES) throw new Error("request body too large");
    chunks.push(chunk);
  }
  return Buffer.concat(chunks).toString("utf8");
}

function sendJson(res: ServerResponse, status: number, body: unknown): void {
  const text = JSON.stringify(body);
  res.writeHead(status, { "content-type": "application/json", "content-length": Buffer.byteLength(text) });
  res.end(text);
}

/** A response on a socket: `drain` is the reader wanting more, the response's `close` is the exchange over. */
function socketReply(req: IncomingMessage, res: ServerResponse): SimReply {
  const gone = new AbortController();
  res.once("close", () => gone.abort());
  return {
    gone: gone.signal,
    get finished() {
      return res.writableFinished;
    },
    get closed() {
      return res.destroyed;
    },
    head(status, headers) {
      res.writeHead(status, headers);
      // A sized body's headers go out with it; a streamed body's go now, before its first event.
      if (headers["content-length"] === undefined) res.flushHeaders();
    },
    write: (bytes) => res.write(bytes),
    drained: () =>
      once(res, "drain", { signal: gone.signal }).then(
        () => true,
        () => false,
      ),
    end(bytes) {
      if (bytes) res.end(bytes);
      else res.end();
    },
    disconnect(how) {
      if (how === "reset") req.socket.resetAndDestroy();
      else req.socket.end();
    },
  };
}

function handleControl(req: IncomingMessage, res: ServerResponse, url: URL, simulation: Simulation, stats: () => SimulatorStats): void {
  const { records } = simulation;
  const tag = url.searchParams.get("tag");
  const matches = (r: RequestRecord) => tag === null || r.tag === tag;
  if (req.method === "GET" && url.pathname === "/_sim/requests") {
    sendJson(res, 200, records.all().filter(matches));
  } else if (req.method === "GET" && url.pathname === "/_sim/stats") {
    sendJson(res, 200, stats());
  } else if (req.method === "POST" && url.pathname === "/_sim/release" && tag !== null) {
    records.release(tag);
    sendJson(res, 200, { ok: true });
  } else if (req.method === "POST" && url.pathname === "/_sim/reset") {
    simulation.reset();
    sendJson(res, 200, { ok: true });
  } else if (req.method === "GET" && url.pathname === "/_sim/idle") {
    // Long-poll until no generation request is in progress, e.g. after a
    // gateway that does not cancel upstream left streams running.
    const timeoutMs = Math.min(Number(url.searchParams.get("timeout_ms") ?? 10_000) || 10_000, 120_000);
    simulation.whenNoRequests(timeoutMs).then(
      () => sendJson(res, 200, stats()),
      () => sendJson(res, 408, stats()),
    );
  } else if (req.method === "GET" && url.pathname === "/_sim/wait") {
    // Long-poll until a matching request has ended: lets another process
    // (a benchmark) wait on the simulator's observation instead of sleeping.
    const timeoutMs = Math.min(Number(url.searchParams.get("timeout_ms") ?? 10_000) || 10_000, 120_000);
    records
      .waitFor((r) => matches(r) && r.endedAt !== undefined, timeoutMs)
      .then(
        (r) => sendJson(res, 200, r),
        (e: Error) => sendJson(res, 408, { error: e.message }),
      );
  } else {
    sendJson(res, 404, { error: { message: `no route ${req.method} ${url.pathname}`, type: "not_found" } });
  }
}

/** The Vertex AI part of a simulator's surface, at `origin`. */
export function vertexSurface(origin: string, simulation: Simulation): Pick<Simulator, "vertexBaseUrl" | "googleTokenUrl" | "googleServiceAccount" | "googleTokenRequests"> {
  const googleTokenUrl = `${origin}${GOOGLE_TOKEN_PATH}`;
  return {
    vertexBaseUrl: `${origin}/v1/projects/sim-project/locations/us-central1`,
    googleTokenUrl,
    googleServiceAccount: (options) => simulation.googleOAuth.serviceAccount(googleTokenUrl, options),
    googleTokenRequests: (email) => simulation.googleOAuth.tokenRequests(email),
  };
}

/** Starts the simulator on a loopback port. */
export async function startSimulator(options: SimulatorOptions = {}): Promise<Simulator> {
  const simulation = createSimulation(options.acceptKeys ? { acceptKeys: options.acceptKeys } : {});
  const sockets = new Set<Socket>();
  const connectionsGone = new EventEmitter();
  const stats = (): SimulatorStats => ({
    openConnections: sockets.size,
    activeRequests: simulation.activeRequests,
    totalRequests: simulation.records.all().length,
  });

  const server: Server = createServer({ keepAliveTimeout: 30_000 }, (req, res) => {
    const method = req.method ?? "GET";
    const path = req.url ?? "/";
    if (!simulation.serves(method, path)) return handleControl(req, res, new URL(path, "http://simulator"), simulation, stats);
    const exchange: SimExchange = { method, path, headers: req.headers, readBody: () => readBody(req), reply: socketReply(req, res) };
    simulation.serve(exchange).catch(() => res.destroy());
  });
  server.on("connection", (socket: Socket) => {
    sockets.add(socket);
    socket.once("close", () => {
      sockets.delete(socket);
      if (sockets.size === 0) connectionsGone.emit("idle");
    });
  });
  // A deep accept queue: a gateway opening thousands of upstream connections
  // at once must not see SYN drops that a real provider would not cause.
  server.listen({ port: options.port ?? 0, host: options.host ?? "127.0.0.1", backlog: 65_535 });
  await once(server, "listening");
  const { port } = server.address() as AddressInfo;
  const origin = `http://${options.host ?? "127.0.0.1"}:${port}`;
  return {
    origin,
    openAiBaseUrl: `${origin}/v1`,
    anthropicBaseUrl: `${origin}/v1`,
    geminiBaseUrl: `${origin}/v1beta`,
    ...vertexSurface(origin, simulation),
    azureBaseUrl: `${origin}/openai`,
    bedrockBaseUrl: origin,
    records: simulation.records,
    keysSeen: () => simulation.keysSeen(),
    stats,
    async whenNoConnections(timeoutMs) {
      if (sockets.size === 0) return;
      await once(connectionsGone, "idle", { signal: AbortSignal.timeout(timeoutMs) });
    },
    async close() {
      const closed = once(server, "close");
      server.close();
      for (const socket of sockets) socket.destroy();
      await closed;
    },
  };
}
