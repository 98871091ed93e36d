import type { OutgoingHttpHeaders } from "node:http";
import { constants as http2Constants } from "node:http2";
import { Code } from "@connectrpc/connect";
import type { UniversalServerResponse } from "@connectrpc/connect/protocol";
import type { Exchange } from "../../http/exchange.js";
import { type AnyResponse, resetResponse, writeChunk } from "../../http/node-http.js";
import { writable } from "../../http/writable.js";
import type { RpcWire } from "./rpc-request.js";

/**
 * gRPC's grpc-message is percent-encoded, but only for bytes outside
 * printable ASCII and for `%` itself. connect encodes with
 * encodeURIComponent, which also escapes `:`, `"` and the like; grpc-js
 * decodes with decodeURI, which leaves those escapes in place, so its users
 * read `unknown model "nope"%3A …`. Re-encoded minimally, every client
 * (grpc-js, connect, grpc-go behind buf curl) shows the plain message.
 */
export function grpcMessageEncoding(value: string): string {
  let text: string;
  try {
    text = decodeURIComponent(value);
  } catch {
    return value;
  }
  let out = "";
  for (const byte of Buffer.from(text, "utf8")) {
    out += byte >= 0x20 && byte <= 0x7e && byte !== 0x25 ? String.fromCharCode(byte) : `%${byte.toString(16).toUpperCase().padStart(2, "0")}`;
  }
  return out;
}

function nodeHeaders(headers: Headers): OutgoingHttpHeaders {
  const out: OutgoingHttpHeaders = {};
  headers.forEach((value, name) => {
    out[name] = name === "grpc-message" ? grpcMessageEncoding(value) : value;
  });
  return out;
}

/** gRPC status numbers as the lower-case names Connect uses (`resource_exhausted`); 0 is `ok`. */
const CODE_NAMES: Record<number, string> = {
  0: "ok",
  ...Object.fromEntries(
    Object.entries(Code)
      .filter(([, v]) => typeof v === "number")
      .map(([name, v]) => [v, name.replace(/([a-z])([A-Z])/g, "$1_$2").toLowerCase()]),
  ),
};

/** The RPC's outcome as a gRPC code name, read from what was sent, for the access line. */
function outcomeOf(wire: RpcWire | undefined, res: UniversalServerResponse, last: Uint8Array | undefined): string {
  const grpcStatus = res.trailer?.get("grpc-status") ?? res.header?.get("grpc-status");
  if (grpcStatus !== null && grpcStatus !== undefined) return CODE_NAMES[Number(grpcStatus)] ?? "unknown";
  if (last && last.length >= 5 && wire?.enveloped) {
    const flags = last[0]!;
    const text = Buffer.from(last.subarray(5)).toString("utf8");
    if (wire.protocol === "grpc-web" && (flags & 0x80) !== 0) {
      const status = /grpc-status:\s*(\d+)/i.exec(text);
      return status ? (CODE_NAMES[Number(status[1])] ?? "unknown") : "ok";
    }
    if (wire.protocol === "connect" && (flags & 0x02) !== 0) {
      const code = /"code"\s*:\s*"([a-z_]+)"/.exec(text);
      return code ? code[1]! : "ok";
    }
  }
  if (res.status === 200) return "ok";
  const code = last ? /"code"\s*:\s*"([a-z_]+)"/.exec(Buffer.from(last).toString("utf8")) : null;
  return code ? code[1]! : `http_${res.status}`;
}

export interface WriteOptions {
  /** Longest wait for a client to take more bytes before the stream is reset (nginx's send_timeout). */
  readonly sendTimeoutMs: number;
  /**
   * True when the request body was refused before its end. Over HTTP/2 the
   * stream is then reset once the response is out (the rest of the body is
   * discarded as it comes, so the stream can close). Over HTTP/1.1 the
   * request guard closes the connection after the response, lingering
   * briefly so that a client still sending can read its status.
   */
  readonly bodyLeftUnread: () => boolean;
}

/**
 * One RPC's response as it is written: headers wait for the first message
 * (so a handler can still set them), each message waits for the client to
 * take the previous one only when the socket says so (no promise per write
 * on the fast path), trailers carry the status with a spec-minimal
 * grpc-message, and every wait ends when the client leaves. The pulled
 * path (connect's handlers) and the pushed one (the lean StreamChat) both
 * write through it.
 */
export interface RpcWriter {
  /** One enveloped message; false when the client's buffer is full (wait for `writable`). */
  message(uRes: UniversalServerResponse, bytes: Uint8Array): boolean;
  /** Resolves when the client takes bytes again; rejects when it leaves or stalls past the send timeout. */
  writable(): Promise<void>;
  /** The last message is out: headers if none went yet, then the trailers with the status. */
  end(uRes: UniversalServerResponse): void;
  /** The response cannot complete (the client left, a write failed): a 500 before the headers, a reset after. */
  fail(): void;
}

export function createRpcWriter(res: AnyResponse, exchange: Exchange, wire: RpcWire | undefined, options: WriteOptions): RpcWriter {
  let last: Uint8Array | undefined;
  const writeHead = (uRes: UniversalServerResponse) => {
    if (res.headersSent) return;
    res.writeHead(uRes.status, nodeHeaders(uRes.header ?? new Headers()));
  };
  return {
    message(uRes, bytes) {
      writeHead(uRes);
      last = bytes;
      return writeChunk(res, bytes);
    },
    writable: () => writable(res, exchange, options.sendTimeoutMs),
    end(uRes) {
      writeHead(uRes);
      if (uRes.trailer) res.addTrailers(nodeHeaders(uRes.trailer));
      exchange.code = outcomeOf(wire, uRes, last);
      // HTTP/2: a request refused before its body ended is still being sent.
      // RST_STREAM(NO_ERROR) tells the client to stop, as gRPC servers do, but
      // only once the trailers carrying the status are out (Node's response
      // sends them on `wantTrailers`; this listener runs after its own).
      if (options.bodyLeftUnread() && "stream" in res) {
        const stream = res.stream;
        // Node's own listener has only queued the trailers; the session writes queued frames in a native immediate, which runs before this one.
        // Submitted in the same turn, the reset went out first on a socket with its native handle (the JS stream wrapper used to hide it).
        stream.once(uRes.trailer ? "wantTrailers" : "finish", () => setImmediate(() => stream.close(http2Constants.NGHTTP2_NO_ERROR)));
      }
      res.end();
    },
    fail() {
      exchange.code ??= "canceled";
      if (!res.headersSent && !res.destroyed) {
        res.writeHead(500);
        res.end();
      } else if (!res.writableEnded) resetResponse(res);
    },
  };
}

/** Writes connect's response (its body pulled message by message) to Node's. */
export async function writeRpcResponse(uRes: UniversalServerResponse, res: AnyResponse, exchange: Exchange, wire: RpcWire | undefined, options: WriteOptions): Promise<void> {
  const it = uRes.body?.[Symbol.asyncIterator]();
  const writer = createRpcWriter(res, exchange, wire, options);
  try {
    if (it) {
      for (let chunk = await it.next(); chunk.done !== true; chunk = await it.next()) {
        if (exchange.signal.aborted) throw exchange.signal.reason;
        if (!writer.message(uRes, chunk.value)) await writer.writable();
      }
    }
    if (exchange.signal.aborted) throw exchange.signal.reason;
    writer.end(uRes);
  } catch (error) {
    // Let the handler's generator see the failure and clean up.
    await it?.throw?.(error).catch(() => undefined);
    writer.fail();
  } finally {
    void it?.return?.(undefined).catch(() => undefined);
  }
}
