import { promisify } from "node:util";
import { gunzip } from "node:zlib";
import type { DescMessage } from "@bufbuild/protobuf";
import { Code, ConnectError } from "@connectrpc/connect";
import { scanJson } from "../../core/json-scan.js";
import type { StructureLimits } from "../../core/structure-limits.js";
import { clampDelay, MAX_TIMER_MS } from "../../core/timers.js";
import type { AnyRequest } from "../../http/node-http.js";
import { type BodyLimits, bodyTooLarge, readBody } from "../../http/read-body.js";
import { toConnectError } from "./connect-errors.js";
import { scanProto } from "./proto-scan.js";

const gunzipAsync = promisify(gunzip);

/** How the RPC protocols frame a request body. */
export type RpcProtocol = "grpc" | "grpc-web" | "connect";

export interface RpcWire {
  readonly protocol: RpcProtocol;
  /** Length-prefixed envelopes (gRPC, gRPC-Web, Connect streaming) or one raw message (Connect unary). */
  readonly enveloped: boolean;
  readonly json: boolean;
}

/** The wire format a content type names; undefined for anything else (connect answers 415). */
export function rpcWireOf(contentType: string | undefined): RpcWire | undefined {
  if (!contentType) return undefined;
  const type = contentType.toLowerCase();
  const json = /[+/]json\b/.test(type);
  if (type.startsWith("application/grpc-web")) return { protocol: "grpc-web", enveloped: true, json };
  if (type.startsWith("application/grpc")) return { protocol: "grpc", enveloped: true, json };
  if (type.startsWith("application/connect+")) return { protocol: "connect", enveloped: true, json };
  if (type.startsWith("application/json") || type.startsWith("application/proto")) return { protocol: "connect", enveloped: false, json };
  return undefined;
}

/** `maxRequestBytes` bounds the whole body and also any one message after decompression. */
export interface RequestBodyLimits extends StructureLimits, BodyLimits {}

/**
 * Web headers for connect, from Node's. Pseudo-headers are dropped, and so
 * is any value the Headers class refuses (it throws on characters outside
 * Latin-1, which an HTTP/2 client can send). Deadlines past Node's timer
 * range are clamped here, before connect arms a timer with them: a valid
 * `grpc-timeout: 597H` used to fire at once as DEADLINE_EXCEEDED.
 */
export function webHeaders(req: AnyRequest): Headers {
  const headers = new Headers();
  for (const [name, value] of Object.entries(req.headers)) {
    if (name.startsWith(":") || value === undefined) continue;
    try {
      if (Array.isArray(value)) for (const v of value) headers.append(name, v);
      else headers.set(name, value);
    } catch {
      // An unrepresentable value: the header is ignored, as if never sent.
    }
  }
  clampDeadlineHeaders(headers);
  return headers;
}

const GRPC_TIMEOUT = /^(\d{1,8})([HMSmun])$/;
const UNIT_MS: Record<string, number> = { H: 3_600_000, M: 60_000, S: 1000, m: 1, u: 0.001, n: 0.000001 };

function clampDeadlineHeaders(headers: Headers): void {
  const grpc = headers.get("grpc-timeout");
  const match = grpc === null ? null : GRPC_TIMEOUT.exec(grpc);
  // 99999999m (27.7 hours) is the largest grpc-timeout that fits a timer;
  // no phase of a stream may last that long anyway.
  if (match && Number(match[1]) * UNIT_MS[match[2]!]! > MAX_TIMER_MS) headers.set("grpc-timeout", "99999999m");
  const connect = headers.get("connect-timeout-ms");
  if (connect !== null && /^\d{1,10}$/.test(connect)) headers.set("connect-timeout-ms", String(clampDelay(Number(connect))));
}

/** A message decompressed by its declared encoding; undefined for an encoding other than gzip (connect refuses it). */
export async function decompress(data: Uint8Array, encoding: string | null, limit: number): Promise<Uint8Array | undefined> {
  if (encoding === null || encoding === "identity") return data;
  // Other encodings are connect's to refuse (UNIMPLEMENTED, naming what it accepts).
  if (encoding !== "gzip") return undefined;
  try {
    return await gunzipAsync(data, { maxOutputLength: limit });
  } catch (error) {
    if ((error as { code?: string }).code === "ERR_BUFFER_TOO_LARGE") throw bodyTooLarge(limit);
    throw new ConnectError("request message is not valid gzip", Code.InvalidArgument);
  }
}

function refuseDeclaredOversize(first: Buffer, limit: number): void {
  if (first.length >= 5 && first.readUInt32BE(1) > limit) throw bodyTooLarge(limit);
}

/**
 * Reads and checks a request that carries exactly one message (unary and
 * server-streaming methods) before connect decodes it: size, one envelope,
 * decompressed size, and element count and nesting by a cheap scan. Returns
 * the body unchanged for connect to decode.
 */
export async function checkedBody(req: AnyRequest, headers: Headers, wire: RpcWire, input: DescMessage, limits: RequestBodyLimits): Promise<Buffer> {
  // An envelope declaring more than the limit is refused from its first bytes, not after 4 MiB of them.
  const body = await readBody(req, limits, wire.enveloped ? (first) => refuseDeclaredOversize(first, limits.maxRequestBytes) : undefined);
  let message: Uint8Array | undefined;
  let encoding: string | null;
  if (wire.enveloped) {
    if (body.length < 5) return body; // connect reports the missing message
    const length = body.readUInt32BE(1);
    if (length > limits.maxRequestBytes) throw bodyTooLarge(limits.maxRequestBytes);
    if (5 + length < body.length) {
      throw new ConnectError("protocol error: received extra input message for a method that takes one", Code.Unimplemented);
    }
    message = body.subarray(5, 5 + length);
    encoding = (body[0]! & 1) === 1 ? headers.get(wire.protocol === "connect" ? "connect-content-encoding" : "grpc-encoding") : null;
  } else {
    message = body;
    encoding = headers.get("content-encoding");
  }
  const plain = await decompress(message, encoding, limits.maxRequestBytes);
  if (plain) {
    if (wire.json) scanJson(plain, limits);
    else scanProto(input, plain, limits);
  }
  return body;
}

/** Counts bytes through a request stream that stays open (bidirectional methods such as reflection). */
async function* countedBody(req: AnyRequest, limit: number): AsyncGenerator<Uint8Array> {
  let size = 0;
  for await (const chunk of req as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > limit) throw toConnectError(bodyTooLarge(limit));
    yield chunk;
  }
}

/**
 * The request body as connect reads it. Every failure is thrown from inside
 * the iterable as a ConnectError, so connect writes it in the protocol the
 * client speaks (gRPC trailers, Connect JSON, gRPC-Web trailer frame).
 */
export function limitedBody(req: AnyRequest, headers: Headers, wire: RpcWire | undefined, method: { readonly methodKind: string; readonly input: DescMessage }, limits: RequestBodyLimits): AsyncIterable<Uint8Array> {
  if (!wire || method.methodKind === "bidi_streaming" || method.methodKind === "client_streaming") {
    return countedBody(req, limits.maxRequestBytes);
  }
  return (async function* () {
    try {
      yield await checkedBody(req, headers, wire, method.input, limits);
    } catch (error) {
      throw toConnectError(error);
    }
  })();
}
