import { type ClientHttp2Session, connect as h2connect, type IncomingHttpHeaders, type OutgoingHttpHeaders } from "node:http2";
import { connect, type Socket } from "node:net";

/** Sends raw bytes on a new TCP connection and resolves with everything the server wrote once it closes the connection. */
export function rawExchange(baseUrl: string, text: string | Buffer): Promise<string> {
  const { hostname, port } = new URL(baseUrl);
  return new Promise((resolve, reject) => {
    const socket = connect(Number(port), hostname, () => socket.write(text));
    let out = "";
    socket.on("data", (d: Buffer) => (out += d.toString("latin1")));
    socket.on("close", () => resolve(out));
    socket.on("error", reject);
  });
}

/** The status code of a raw HTTP/1.x response. */
export function statusOf(response: string): number {
  return Number(/^HTTP\/1\.[01] (\d{3})/.exec(response)?.[1] ?? 0);
}

/** Opens a TCP connection and keeps it; resolves once connected. */
export function openSocket(baseUrl: string): Promise<Socket> {
  const { hostname, port } = new URL(baseUrl);
  return new Promise((resolve, reject) => {
    const socket = connect(Number(port), hostname, () => resolve(socket));
    socket.once("error", reject);
  });
}

/** Resolves when the socket is closed (by either side). */
export function closed(socket: Socket): Promise<void> {
  return socket.destroyed && socket.closed ? Promise.resolve() : new Promise((resolve) => socket.once("close", () => resolve()));
}

export interface H2Response {
  readonly headers: IncomingHttpHeaders;
  readonly trailers: IncomingHttpHeaders;
  readonly body: Buffer;
}

/** One HTTP/2 request on its own session, collected whole. */
export async function h2request(baseUrl: string, headers: OutgoingHttpHeaders, body?: Buffer): Promise<H2Response> {
  const session: ClientHttp2Session = h2connect(baseUrl);
  try {
    return await new Promise<H2Response>((resolve, reject) => {
      const stream = session.request(headers);
      let responseHeaders: IncomingHttpHeaders = {};
      let trailers: IncomingHttpHeaders = {};
      const chunks: Buffer[] = [];
      stream.on("response", (h) => (responseHeaders = h));
      stream.on("trailers", (t) => (trailers = t));
      stream.on("data", (d: Buffer) => chunks.push(d));
      stream.on("end", () => resolve({ headers: responseHeaders, trailers, body: Buffer.concat(chunks) }));
      stream.on("error", reject);
      stream.end(body);
    });
  } finally {
    session.close();
  }
}

/** A gRPC length-prefixed message (uncompressed unless `compressed`). */
export function grpcFrame(message: Uint8Array, compressed = false): Buffer {
  const head = Buffer.alloc(5);
  head[0] = compressed ? 1 : 0;
  head.writeUInt32BE(message.length, 1);
  return Buffer.concat([head, message]);
}
