import type { Server as NetServer, Socket } from "node:net";
import { TLSSocket, type TlsOptions, Server as TlsServer } from "node:tls";
import type { TlsCredentials } from "../config/tls-files.js";
import type { AnyRequest } from "../http/node-http.js";
import type { Logger } from "../logging/logger.js";

/**
 * The polyglot server's `tls` options for the one port: ALPN offers h2 first, then
 * http/1.1, so gRPC clients get HTTP/2 and browsers or curl may take
 * either; a client that offers no ALPN is sniffed as over cleartext. With a
 * client CA, every client must present a certificate it signed (mTLS).
 */
export function tlsListenerOptions(credentials: TlsCredentials): TlsOptions {
  return {
    cert: credentials.cert,
    key: credentials.key.reveal(),
    ALPNProtocols: ["h2", "http/1.1"],
    ...(credentials.clientCa !== undefined ? { ca: credentials.clientCa, requestCert: true, rejectUnauthorized: true } : {}),
  };
}

/**
 * On a TLS listener, closes connections that skipped TLS. The polyglot
 * server serves cleartext and TLS on the same port and hands a cleartext socket
 * straight to its HTTP servers; a TLS-only gateway (and above all an mTLS
 * one) must not answer it. The socket is destroyed as soon as it is handed
 * over. That alone is not enough: the bytes the polyglot server peeked at are
 * already back in the socket's buffer, and a destroyed stream still emits
 * what it buffered, so the first request can reach the HTTP parser; the
 * route refuses it with `cameOverTls`.
 */
export function refuseCleartext(server: NetServer, logger: Logger): void {
  server.on("connection", function (this: unknown, socket: Socket) {
    // The outer listener and the TLS server see every accepted socket
    // before the protocol is known; only an HTTP server's copy tells.
    if (this === server || this instanceof TlsServer || socket instanceof TLSSocket) return;
    logger.debug({ event: "connection.cleartext_refused", remote: socket.remoteAddress });
    socket.destroy();
  });
  server.on("tlsClientError", (error: NodeJS.ErrnoException) => {
    // Failed handshakes, missing or untrusted client certificates: the TLS
    // server closes the socket itself.
    logger.debug({ event: "connection.tls_failed", code: error.code });
  });
}

/** Whether a request arrived over TLS (on HTTP/2, `req.socket` stands for the session's socket). */
export function cameOverTls(req: AnyRequest): boolean {
  return (req.socket as Partial<TLSSocket> | null)?.encrypted === true;
}
