import { create, fromBinary, type MessageInitShape, toBinary } from "@bufbuild/protobuf";
import { type Client, ConnectError, createClient, type Transport } from "@connectrpc/connect";
import { createConnectTransport, createGrpcTransport, createGrpcWebTransport } from "@connectrpc/connect-node";
import { createGrpcWebTransport as createFetchGrpcWebTransport } from "@connectrpc/connect-web";
import * as grpc from "@grpc/grpc-js";
import { Role } from "../../gen/sluice/v1/chat_pb.js";
import { type ChatRequest, ChatRequestSchema, ChatService, type StreamChatRequest, StreamChatRequestSchema, type StreamChatResponse, StreamChatResponseSchema } from "../../gen/sluice/v1/chat_service_pb.js";

export type ChatClient = Client<typeof ChatService>;

/** The connect-es transports, each over the HTTP version its protocol is used with. */
export function transports(baseUrl: string): Record<string, Transport> {
  return {
    "grpc (connect-node, h2)": createGrpcTransport({ baseUrl }),
    "connect (connect-node, HTTP/1.1)": createConnectTransport({ baseUrl, httpVersion: "1.1" }),
    "connect (connect-node, h2)": createConnectTransport({ baseUrl, httpVersion: "2" }),
    "grpc-web (connect-node, HTTP/1.1)": createGrpcWebTransport({ baseUrl, httpVersion: "1.1" }),
    "grpc-web (connect-web, fetch)": createFetchGrpcWebTransport({ baseUrl }),
  };
}

export function chatClient(transport: Transport): ChatClient {
  return createClient(ChatService, transport);
}

/** A request with one user message. */
export function userRequest(model: string, text: string, extra: Omit<Exclude<MessageInitShape<typeof StreamChatRequestSchema>, StreamChatRequest>, "model" | "messages"> = {}): StreamChatRequest {
  return create(StreamChatRequestSchema, {
    ...extra,
    model,
    messages: [{ role: Role.USER, content: [{ part: { case: "text", value: text } }] }],
  });
}

/** The same request for the unary Chat method (the two messages share every field). */
export function unary(request: StreamChatRequest): ChatRequest {
  const { $typeName: _, ...fields } = request;
  return create(ChatRequestSchema, fields);
}

export async function collect(stream: AsyncIterable<StreamChatResponse>): Promise<StreamChatResponse[]> {
  const out: StreamChatResponse[] = [];
  for await (const message of stream) out.push(message);
  return out;
}

export function textOf(messages: readonly StreamChatResponse[]): string {
  return messages.map((m) => (m.delta.case === "text" ? m.delta.value.text : "")).join("");
}

/**
 * A client nobody here wrote: @grpc/grpc-js with a generic client and
 * protobuf-es only for (de)serialization.
 */
export function grpcJsStream(
  baseUrl: string,
  request: StreamChatRequest,
  options: { deadline?: Date; metadata?: grpc.Metadata; channelOptions?: grpc.ChannelOptions; credentials?: grpc.ChannelCredentials } = {},
): { messages: Promise<StreamChatResponse[]>; call: grpc.ClientReadableStream<StreamChatResponse>; close(): void } {
  const address = new URL(baseUrl).host;
  const client = new grpc.Client(address, options.credentials ?? grpc.credentials.createInsecure(), options.channelOptions);
  const call = client.makeServerStreamRequest<StreamChatRequest, StreamChatResponse>(
    "/sluice.v1.ChatService/StreamChat",
    (m) => Buffer.from(toBinary(StreamChatRequestSchema, m)),
    (b) => fromBinary(StreamChatResponseSchema, b),
    request,
    options.metadata ?? new grpc.Metadata(),
    options.deadline ? { deadline: options.deadline } : {},
  );
  const messages = new Promise<StreamChatResponse[]>((resolve, reject) => {
    const out: StreamChatResponse[] = [];
    call.on("data", (m: StreamChatResponse) => out.push(m));
    call.on("error", reject);
    call.on("end", () => resolve(out));
  });
  return { messages, call, close: () => client.close() };
}

/** The ConnectError a call ends with; fails the test when the call succeeds. */
export async function rpcFailure(call: Promise<unknown>): Promise<ConnectError> {
  try {
    await call;
  } catch (e) {
    return ConnectError.from(e);
  }
  throw new Error("expected the call to fail");
}

/** Streams `request` and drops the connection on the `after`-th text delta (a client that lost its network); the messages received. */
export async function streamAndDrop(client: ChatClient, request: StreamChatRequest, after: number, headers: Record<string, string> = {}): Promise<StreamChatResponse[]> {
  const abort = new AbortController();
  const received: StreamChatResponse[] = [];
  let texts = 0;
  try {
    for await (const m of client.streamChat(request, { headers, signal: abort.signal })) {
      received.push(m);
      if (m.delta.case === "text" && ++texts === after) {
        abort.abort();
        break;
      }
    }
  } catch {
    // The client's own abort.
  }
  return received;
}
