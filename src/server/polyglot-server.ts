import { EventEmitter } from "node:events";
import * as http from "node:http";
import * as http2 from "node:http2";
import * as net from "node:net";
import * as tls from "node:tls";

/** The client preface every HTTP/2 connection starts with (RFC 9113 §3.4). */
const HTTP2_PREFACE = Buffer.from("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n");
/** A TLS record of type handshake: a ClientHello. */
const TLS_HANDSHAKE = 0x16;

export interface PolyglotOptions {
  readonly http?: http.ServerOptions;
  readonly http2?: http2.ServerOptions;
  /** TLS on the port; absent: a TLS handshake is closed at once. */
  readonly tls?: tls.TlsOptions;
}

/**
 * One TCP port for HTTP/1.1 and cleartext HTTP/2 (h2c with prior
 * knowledge), and TLS with ALPN: the first bytes of each connection say
 * which server takes it.
 *
 * Why not httpolyglot, which did this before: it hands HTTP/2 sockets to
 * node:http2 with their native handle disabled (`isStreamBase = false`, a
 * workaround for HTTP/2 over non-socket streams), so every byte of every
 * gRPC stream went through a JavaScript stream wrapper. node:http2 reads
 * the bytes peeked here from the socket's buffer itself, so the socket keeps
 * its native handle (bench: issue #25's commit has the same-run figures).
 *
 * The shape is httpolyglot's, which the connection guard and the TLS-only
 * refusal rely on: listeners added to this server are added to each
 * sub-server too, so `connection` is seen first with `this` the outer
 * server (the raw socket), then again on the server that takes it.
 */
export class PolyglotServer extends net.Server {
  readonly #http1: http.Server;
  readonly #http2: http2.Http2Server;
  readonly #tls: EventEmitter;

  constructor(options: PolyglotOptions, listener: (req: http.IncomingMessage | http2.Http2ServerRequest, res: http.ServerResponse | http2.Http2ServerResponse) => void) {
    super((socket) => this.#sniff(socket));
    this.#http1 = new http.Server(options.http ?? {}, listener);
    this.#http2 = http2.createServer(options.http2 ?? {}, listener);
    if (options.tls) {
      this.#tls = new tls.Server(options.tls, (socket) => this.#afterHandshake(socket));
    } else {
      this.#tls = new EventEmitter();
      this.#tls.on("connection", (socket: net.Socket) => socket.destroy());
    }
    const subServers: EventEmitter[] = [this.#http1, this.#http2, this.#tls];
    this.on("newListener", (event: string, fn: (...args: unknown[]) => void) => {
      for (const sub of subServers) sub.on(event, fn);
    });
    this.on("removeListener", (event: string, fn: (...args: unknown[]) => void) => {
      for (const sub of subServers) sub.off(event, fn);
    });
  }

  /** Reads the first bytes, puts them back, and hands the socket to the server they name. */
  #sniff(socket: net.Socket, seen?: Buffer): void {
    const read = socket.read() as Buffer | null;
    if (read === null && seen === undefined) {
      socket.off("error", ignore).on("error", ignore);
      socket.once("readable", () => this.#sniff(socket));
      return;
    }
    const data = seen && read ? Buffer.concat([seen, read]) : (read ?? seen!);
    socket.off("error", ignore);
    if (data[0] === TLS_HANDSHAKE) {
      socket.unshift(data);
      // TLS does not half-close.
      socket.allowHalfOpen = false;
      this.#tls.emit("connection", socket);
      return;
    }
    if (data[0] !== HTTP2_PREFACE[0]) {
      socket.unshift(data);
      this.#http1.emit("connection", socket);
      return;
    }
    const known = Math.min(data.length, HTTP2_PREFACE.length);
    if (!data.subarray(0, known).equals(HTTP2_PREFACE.subarray(0, known))) {
      socket.unshift(data);
      this.#http1.emit("connection", socket);
      return;
    }
    if (data.length < HTTP2_PREFACE.length) {
      // Part of the preface so far: wait for the rest.
      socket.off("error", ignore).on("error", ignore);
      socket.once("readable", () => this.#sniff(socket, data));
      return;
    }
    socket.unshift(data);
    this.#http2.emit("connection", socket);
  }

  /** A finished handshake: ALPN names the server; without ALPN the decrypted bytes are sniffed as cleartext ones are. */
  #afterHandshake(socket: tls.TLSSocket): void {
    if (socket.alpnProtocol === "h2") this.#http2.emit("connection", socket);
    else if (socket.alpnProtocol === "http/1.1" || socket.alpnProtocol === "http 1.1") this.#http1.emit("connection", socket);
    else this.#sniff(socket);
  }
}

function ignore(): void {
  // A socket that fails before its protocol is known is closed by the error itself.
}
