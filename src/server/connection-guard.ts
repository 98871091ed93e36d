import { Server as Http1Server, type IncomingMessage } from "node:http";
import type { Http2Session } from "node:http2";
import type { Server as NetServer, Socket } from "node:net";
import { TLSSocket, Server as TlsServer } from "node:tls";
import { clampDelay } from "../core/timers.js";
import type { AnyRequest, AnyResponse } from "../http/node-http.js";
import type { Logger } from "../logging/logger.js";

export interface ConnectionLimits {
  /** A connection must complete its first request's headers (HTTP/2: open its first stream) within this. */
  readonly headersTimeoutMs: number;
  /** A connection with nothing in flight (HTTP/1.1 keep-alive, HTTP/2 with no stream) is closed after this. */
  readonly idleTimeoutMs: number;
  /** Open connections; past it the longest-idle connection is closed to make room, or the new one is refused. */
  readonly maxConnections: number;
}

interface Connection {
  /** The accepted TCP socket. */
  readonly socket: Socket;
  /** Over TLS, the decrypted socket the HTTP server reads from, wrapping `socket`. */
  tls?: TLSSocket;
  /** The TCP four-tuple, by which a TLS socket finds its connection. */
  readonly address: string;
  /** Requests (HTTP/1.1) or streams (HTTP/2) in flight. */
  inFlight: number;
  session?: Http2Session;
  timer?: NodeJS.Timeout;
  /** When it last became idle (or opened): eviction picks the oldest. */
  idleSince: number;
}

export interface ConnectionGuard {
  readonly open: number;
  /** Connections closed by the guard, by reason; for tests and the runtime endpoint. */
  readonly closed: Readonly<Record<"headers_timeout" | "idle_timeout" | "evicted" | "refused", number>>;
  /** Every socket (over TLS, the TLS socket and the TCP socket under it), for shutdown. */
  sockets(): Iterable<Socket>;
  /** Resolves once at most `count` connections are open (now or later). */
  whenAtMost(count: number): Promise<void>;
}

const REFUSAL = "HTTP/1.1 503 Service Unavailable\r\nconnection: close\r\ncontent-type: text/plain\r\ncontent-length: 32\r\n\r\ntoo many connections, retry later";

/**
 * Every connection has a deadline for doing something useful, and there is
 * a ceiling on how many may be open. The one-port listener hands sockets to
 * HTTP servers that never listen themselves, so Node's own header and
 * request timeouts never run; before this, sockets that sent nothing, partial
 * headers or idle HTTP/2 sessions stayed open for minutes, and 1,100 of them
 * used up the process's file descriptors.
 *
 * - a new connection must complete a request's headers (or, over HTTP/2,
 *   open a stream) within `headersTimeoutMs`;
 * - a connection with nothing in flight is closed after `idleTimeoutMs`
 *   (HTTP/2 sessions get GOAWAY first);
 * - at `maxConnections`, a new connection closes the connection that has
 *   been idle longest (never one with a request in flight); if none is idle,
 *   the new connection gets a plain 503 and is closed.
 *
 * Over TLS, the polyglot server hands the HTTP servers a TLSSocket, a different
 * object from the accepted socket; it is tied to its connection by the TCP
 * four-tuple, so that its requests and streams count as activity. The
 * headers deadline also bounds the TLS handshake.
 */
export function guardConnections(server: NetServer, limits: ConnectionLimits, logger: Logger): ConnectionGuard {
  const connections = new Map<Socket, Connection>();
  /** Open connections by TCP four-tuple: unique among open connections to this listener. */
  const byAddress = new Map<string, Connection>();
  /** Every socket an HTTP server may hand us (the TCP socket, or the TLS socket over it). */
  const bySocket = new WeakMap<Socket, Connection>();
  const closed = { headers_timeout: 0, idle_timeout: 0, evicted: 0, refused: 0 };
  let lastSession: Http2Session | undefined;
  const waiters = new Set<{ count: number; wake: () => void }>();
  const settle = () => {
    for (const waiter of waiters) {
      if (connections.size > waiter.count) continue;
      waiters.delete(waiter);
      waiter.wake();
    }
  };

  const close = (conn: Connection, reason: keyof typeof closed) => {
    closed[reason]++;
    logger.debug({ event: "connection.closed", reason, remote: conn.socket.remoteAddress });
    if (conn.session && !conn.session.destroyed) {
      conn.session.close();
      conn.session.destroy();
    }
    conn.tls?.destroy();
    conn.socket.destroy();
  };

  const arm = (conn: Connection, ms: number, reason: "headers_timeout" | "idle_timeout") => {
    clearTimeout(conn.timer);
    conn.timer = setTimeout(() => close(conn, reason), clampDelay(ms));
    conn.timer.unref();
  };

  const busy = (conn: Connection) => {
    conn.inFlight++;
    clearTimeout(conn.timer);
    conn.timer = undefined;
  };

  const idle = (conn: Connection) => {
    conn.inFlight = Math.max(0, conn.inFlight - 1);
    if (conn.inFlight > 0) return;
    conn.idleSince = performance.now();
    if (!conn.socket.destroyed) arm(conn, limits.idleTimeoutMs, "idle_timeout");
  };

  const makeRoom = (): boolean => {
    let oldest: Connection | undefined;
    for (const conn of connections.values()) {
      if (conn.inFlight === 0 && (!oldest || conn.idleSince < oldest.idleSince)) oldest = conn;
    }
    if (!oldest) return false;
    close(oldest, "evicted");
    forget(oldest);
    return true;
  };

  function forget(conn: Connection): void {
    clearTimeout(conn.timer);
    connections.delete(conn.socket);
    if (byAddress.get(conn.address) === conn) byAddress.delete(conn.address);
    settle();
  }

  const addressOf = (socket: Socket) => `${socket.remoteAddress}|${socket.remotePort}|${socket.localAddress}|${socket.localPort}`;

  server.on("connection", function (this: unknown, socket: Socket) {
    // The polyglot server re-emits `connection` on the server that takes the socket
    // after sniffing: the outer listener sees the raw socket first.
    if (this === server) {
      if (connections.size >= limits.maxConnections && !makeRoom()) {
        closed.refused++;
        socket.end(REFUSAL);
        socket.destroySoon();
        return;
      }
      const conn: Connection = { socket, address: addressOf(socket), inFlight: 0, idleSince: performance.now() };
      connections.set(socket, conn);
      byAddress.set(conn.address, conn);
      bySocket.set(socket, conn);
      arm(conn, limits.headersTimeoutMs, "headers_timeout");
      socket.once("close", () => forget(conn));
      return;
    }
    // The TLS server gets the accepted socket first, to run the handshake.
    if (this instanceof TlsServer) return;
    // From here on, `this` is the HTTP server the connection was handed to.
    let conn = bySocket.get(socket);
    if (!conn && socket instanceof TLSSocket) {
      conn = byAddress.get(addressOf(socket));
      if (conn) {
        conn.tls = socket;
        bySocket.set(socket, conn);
      }
    }
    if (this instanceof Http1Server) return;
    // Handed to the HTTP/2 server, which has just created its session.
    if (!conn || !lastSession) return;
    const session = lastSession;
    lastSession = undefined;
    conn.session = session;
    session.on("stream", (stream: { once(event: "close", f: () => void): void }) => {
      busy(conn);
      stream.once("close", () => idle(conn));
    });
  });

  server.on("session", (session: Http2Session) => {
    lastSession = session;
  });

  server.on("request", (req: AnyRequest, res: AnyResponse) => {
    if ("stream" in req) return; // HTTP/2 streams are counted on their session
    const conn = bySocket.get(req.socket);
    if (!conn) return;
    busy(conn);
    res.once("close", () => idle(conn));
  });

  // An upgraded connection (a WebSocket) is a request in flight until its socket closes: its idle rule is its route's.
  server.on("upgrade", (req: IncomingMessage) => {
    const conn = bySocket.get(req.socket);
    if (!conn) return;
    busy(conn);
    req.socket.once("close", () => idle(conn));
  });

  return {
    get open() {
      return connections.size;
    },
    closed,
    *sockets() {
      for (const conn of connections.values()) {
        if (conn.tls) yield conn.tls;
        yield conn.socket;
      }
    },
    whenAtMost(count) {
      if (connections.size <= count) return Promise.resolve();
      return new Promise((wake) => waiters.add({ count, wake }));
    },
  };
}
