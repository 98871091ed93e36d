import { type ConnectRouter, createConnectRouter, createContextKey, createContextValues } from "@connectrpc/connect";
import type { UniversalServerRequest, UniversalServerResponse } from "@connectrpc/connect/protocol";
import { compressionGzip } from "@connectrpc/connect-node";
import type { Exchange } from "../../http/exchange.js";
import { type AnyRequest, type AnyResponse, headerOf, pathOf } from "../../http/node-http.js";
import { type LeanMethod, leanEligible, PUSHED, type PushedImpl, serveLean, serveLeanPushed } from "./lean-grpc-stream.js";
import { checkedBody, limitedBody, type RequestBodyLimits, rpcWireOf, webHeaders } from "./rpc-request.js";
import { createRpcWriter, writeRpcResponse } from "./rpc-response.js";

/** Handlers reach their request's exchange (request id, access-line fields) through this key. */
export const EXCHANGE = createContextKey<Exchange | undefined>(undefined, { description: "sluice exchange" });

export interface RpcHandlerOptions {
  readonly routes: (router: ConnectRouter) => void;
  readonly limits: RequestBodyLimits;
  /** Longest wait for a client to take more bytes before its stream is reset. */
  readonly sendTimeoutMs: number;
}

/**
 * Larger than any message: responses are never compressed. Deltas are tens
 * of bytes, compressing each costs CPU on the hottest path, and buffering in
 * a compressor would hide backpressure. Requests may be gzip-compressed.
 */
const NEVER_COMPRESS = 0xffffffff;

/** Serves the RPC routes; returns false for paths that are not RPC methods. */
export type RpcHandler = (req: AnyRequest, res: AnyResponse, exchange: Exchange) => Promise<void> | false;

/**
 * connect's router behind our own Node adapter, instead of
 * connectNodeAdapter. The adapter is where a request first becomes
 * connect's, so it is where the gateway must hold the line: a whole-body
 * size limit and a structure budget checked before decoding (connect's
 * default was 4 GiB per message), one client-departure signal shared with
 * the facade, writes that cannot hang on a vanished HTTP/2 stream, a send
 * timeout, deadlines clamped to Node's timer range, and gRPC status messages
 * encoded the way grpc-js reads them.
 */
export function createRpcHandler(options: RpcHandlerOptions): RpcHandler {
  const router = createConnectRouter({
    acceptCompression: [compressionGzip],
    compressMinBytes: NEVER_COMPRESS,
    readMaxBytes: options.limits.maxRequestBytes,
  });
  const lean = new Map<string, LeanMethod>();
  options.routes(recordingLeanMethods(router, lean));
  const handlers = new Map(router.handlers.map((h) => [h.requestPath, h]));

  return (req, res, exchange) => {
    const handler = handlers.get(pathOf(req));
    if (!handler) return false;
    const wire = rpcWireOf(headerOf(req, "content-type"));
    exchange.edge = wire?.protocol ?? "connect";
    exchange.route = handler.requestPath;
    const header = webHeaders(req);
    const authority = "authority" in req ? req.authority : headerOf(req, "host");
    const url = `http://${authority && /^[\w.:[\]-]+$/.test(authority) ? authority : "sluice"}${pathOf(req)}`;
    let bodyRefused = false;
    const writeOptions = { sendTimeoutMs: options.sendTimeoutMs, bodyLeftUnread: () => bodyRefused && !req.complete };
    const write = (uRes: UniversalServerResponse) => writeRpcResponse(uRes, res, exchange, wire, writeOptions);
    const leanMethod = lean.get(handler.requestPath);
    if (leanMethod && wire?.protocol === "grpc" && !wire.json && req.method === "POST" && leanEligible(header)) {
      const body = () =>
        checkedBody(req, header, wire, leanMethod.method.input, options.limits).catch((error: unknown) => {
          bodyRefused = true;
          throw error;
        });
      const leanRequest = { url, header, signal: exchange.signal, contextValues: createContextValues().set(EXCHANGE, exchange), body, maxMessageBytes: options.limits.maxRequestBytes };
      const { pushed } = leanMethod;
      if (pushed) return serveLeanPushed({ ...leanMethod, pushed }, leanRequest, createRpcWriter(res, exchange, wire, writeOptions));
      return write(serveLean(leanMethod, leanRequest));
    }
    const uReq: UniversalServerRequest = {
      httpVersion: req.httpVersion,
      method: req.method ?? "",
      url,
      header,
      body: (async function* () {
        try {
          yield* limitedBody(req, header, wire, handler.method, options.limits);
        } catch (error) {
          bodyRefused = true;
          throw error;
        }
      })(),
      signal: exchange.signal,
      contextValues: createContextValues().set(EXCHANGE, exchange),
    };
    return handler(uReq).then(write);
  };
}

/**
 * The router, noting each server-streaming method registered with an
 * implementation: over binary gRPC those take the lean path
 * (lean-grpc-stream.ts); everything else stays connect's.
 */
function recordingLeanMethods(router: ConnectRouter, lean: Map<string, LeanMethod>): ConnectRouter {
  return {
    get handlers() {
      return router.handlers;
    },
    rpc: router.rpc.bind(router) as ConnectRouter["rpc"],
    service(service, implementation, options) {
      router.service(service, implementation, options);
      for (const method of service.methods) {
        const impl = (implementation as Record<string, unknown>)[method.localName];
        if (method.methodKind === "server_streaming" && typeof impl === "function") {
          const pushed = (implementation as { readonly [PUSHED]?: Readonly<Record<string, PushedImpl>> })[PUSHED]?.[method.localName];
          lean.set(`/${service.typeName}/${method.name}`, {
            method: method as LeanMethod["method"],
            impl: impl.bind(implementation) as LeanMethod["impl"],
            ...(pushed ? { pushed } : {}),
          });
        }
      }
      return this;
    },
  };
}
