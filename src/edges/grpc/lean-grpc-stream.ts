import { create, type DescMessage, type DescMethodServerStreaming, fromBinary, isMessage, type MessageInitShape, toBinary } from "@bufbuild/protobuf";
import { Code, ConnectError, type ContextValues, createHandlerContext, type HandlerContext } from "@connectrpc/connect";
import type { UniversalServerResponse } from "@connectrpc/connect/protocol";
import { parseTimeout, setTrailerStatus } from "@connectrpc/connect/protocol-grpc";
import { toConnectError } from "./connect-errors.js";
import { decompress } from "./rpc-request.js";
import type { RpcWriter } from "./rpc-response.js";

/** Where a pushed method sends its messages. */
export interface MessageOut<M> {
  /** False: the client's buffer is full (or it left); wait for `drained` before more. */
  send(message: M): boolean;
  /** A message the method framed itself (text-frame.ts): the same bytes `send` would write, without reflection. */
  sendFrame(frame: Uint8Array): boolean;
  /** Resolves when the client takes bytes again; rejects when it leaves or stalls past the send timeout. */
  drained(): Promise<void>;
}

/** A server-streaming method that pushes its messages to the writer instead of yielding them. */
export type PushedImpl = (request: never, context: HandlerContext, out: MessageOut<MessageInitShape<DescMessage>>) => Promise<void>;

/**
 * Where a service implementation keeps its pushed forms, by method local
 * name: the lean path prefers them; connect's own handlers (gRPC-Web,
 * Connect, in-memory transports) use the generator of the same name.
 */
export const PUSHED: unique symbol = Symbol("sluice.pushed");

/** A server-streaming method and the implementation registered for it. */
export interface LeanMethod {
  readonly method: DescMethodServerStreaming<DescMessage, DescMessage>;
  readonly impl: (request: never, context: HandlerContext) => AsyncIterable<MessageInitShape<DescMessage>>;
  readonly pushed?: PushedImpl;
}

/** What the lean path needs of a request whose body the adapter has read and checked. */
export interface LeanRequest {
  readonly url: string;
  readonly header: Headers;
  readonly signal: AbortSignal;
  readonly contextValues: ContextValues;
  /** The checked body: one envelope (size, count and structure limits already enforced). */
  readonly body: () => Promise<Uint8Array>;
  readonly maxMessageBytes: number;
}

/** Whether a request may take the lean path: binary gRPC, and a request encoding it can read. */
export function leanEligible(header: Headers): boolean {
  const encoding = header.get("grpc-encoding");
  return encoding === null || encoding === "identity" || encoding === "gzip";
}

function envelope(bytes: Uint8Array): Uint8Array {
  const out = new Uint8Array(5 + bytes.length);
  new DataView(out.buffer).setUint32(1, bytes.length);
  out.set(bytes, 5);
  return out;
}

/** The request's one message, refused in connect's words when the envelope is missing or short. */
async function firstMessage(req: LeanRequest, input: DescMessage) {
  const body = await req.body();
  if (body.length === 0) throw new ConnectError("protocol error: missing input message for server_streaming method", Code.Unimplemented);
  if (body.length < 5) throw new ConnectError("protocol error: incomplete envelope", Code.InvalidArgument);
  const length = new DataView(body.buffer, body.byteOffset, body.byteLength).getUint32(1);
  if (5 + length > body.length) throw new ConnectError(`protocol error: promised ${length} bytes, received ${body.length - 5}`, Code.InvalidArgument);
  const compressed = (body[0]! & 1) === 1;
  const message = body.subarray(5, 5 + length);
  const plain = compressed ? await decompress(message, req.header.get("grpc-encoding"), req.maxMessageBytes) : message;
  if (!plain) throw new ConnectError("protocol error: received compressed message without grpc-encoding", Code.Internal);
  try {
    return fromBinary(input, plain);
  } catch (error) {
    throw new ConnectError(`parse binary: ${error instanceof Error ? error.message : String(error)}`, Code.Internal);
  }
}

function asMessage(schema: DescMessage, value: MessageInitShape<DescMessage>) {
  return isMessage(value, schema) ? value : create(schema, value);
}

/**
 * A server-streaming RPC over binary gRPC without connect's generic handler.
 * connect runs every message through about six async-iterable stages
 * (serialize, compress, join, catch, ...), and sets up as many again for the
 * request before the implementation starts; on the gateway's hottest path
 * that was the largest share of a stream's setup time, and the gRPC edge
 * answered its first token later than the SSE facade. Here one generator
 * serializes what the implementation yields and the adapter writes it.
 * What the client sees is what connect sends: the context comes from
 * connect's createHandlerContext, the deadline from its grpc-timeout parser,
 * the status trailers from its own encoder, and the same response headers.
 * gRPC-Web, Connect and JSON payloads keep connect's full handler.
 */
/**
 * The reason the context's signal carries once a call has ended normally,
 * made once: `abort()` without one builds a DOMException, stack and all,
 * which cost about 37 µs per call, the most expensive single step of a
 * short stream's end. Nothing listens by then (the pipeline releases its
 * listener first); it only frees what is tied to the signal.
 */
const CALL_ENDED = new ConnectError("the call has ended", Code.Canceled);

function leanContext(method: LeanMethod["method"], req: LeanRequest) {
  const timeout = parseTimeout(req.header.get("grpc-timeout"), Number.MAX_SAFE_INTEGER);
  const context = createHandlerContext({
    service: method.parent,
    method,
    protocolName: "grpc",
    requestMethod: "POST",
    url: req.url,
    ...(timeout.timeoutMs === undefined ? {} : { timeoutMs: timeout.timeoutMs }),
    requestSignal: req.signal,
    requestHeader: req.header,
    responseHeader: { "content-type": "application/grpc+proto" },
    responseTrailer: { "grpc-status": "0" },
    contextValues: req.contextValues,
  });
  return { context, timeoutError: timeout.error };
}

export function serveLean(lean: LeanMethod, req: LeanRequest): UniversalServerResponse {
  const { method } = lean;
  const { context, timeoutError } = leanContext(method, req);
  async function* body(): AsyncGenerator<Uint8Array, void, undefined> {
    try {
      if (timeoutError) throw timeoutError;
      const input = await firstMessage(req, method.input);
      for await (const message of lean.impl(input as never, context)) yield envelope(toBinary(method.output, asMessage(method.output, message)));
      context.abort(CALL_ENDED);
    } catch (error) {
      context.abort(error);
      setTrailerStatus(context.responseTrailer, toConnectError(error));
    }
  }
  return { status: 200, header: context.responseHeader, trailer: context.responseTrailer, body: body() };
}

/**
 * The lean path for a pushed method: each message the implementation sends
 * is serialized, framed and written to the HTTP/2 stream in the same call,
 * with no async iterable between the pipeline and the socket. The status
 * goes out in the trailers as on the pulled path.
 */
export async function serveLeanPushed(lean: LeanMethod & { readonly pushed: PushedImpl }, req: LeanRequest, writer: RpcWriter): Promise<void> {
  const { method } = lean;
  const { context, timeoutError } = leanContext(method, req);
  const response: UniversalServerResponse = { status: 200, header: context.responseHeader, trailer: context.responseTrailer };
  const out: MessageOut<MessageInitShape<DescMessage>> = {
    send: (message) => !req.signal.aborted && writer.message(response, envelope(toBinary(method.output, asMessage(method.output, message)))),
    sendFrame: (frame) => !req.signal.aborted && writer.message(response, frame),
    drained: () => writer.writable(),
  };
  try {
    if (timeoutError) throw timeoutError;
    const input = await firstMessage(req, method.input);
    await lean.pushed(input as never, context, out);
    context.abort(CALL_ENDED);
  } catch (error) {
    context.abort(error);
    setTrailerStatus(context.responseTrailer, toConnectError(error));
  }
  if (req.signal.aborted) writer.fail();
  else writer.end(response);
}
