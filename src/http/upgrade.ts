import { type IncomingMessage, ServerResponse } from "node:http";
import type { Socket } from "node:net";
import type { Duplex } from "node:stream";
import type { AnyRequest, AnyResponse } from "./node-http.js";

/** The connection an upgrade request came with, for the route that takes it over. */
export interface Upgrade {
  readonly req: IncomingMessage;
  readonly socket: Duplex;
  /** Bytes the client sent after the request's headers (the first WebSocket frames). */
  readonly head: Buffer;
}

const upgrades = new WeakMap<IncomingMessage, Upgrade>();

/**
 * An HTTP/1.1 request with `Connection: upgrade` (Node hands it to the
 * server's `upgrade` listener, not to `request`), served like any other
 * request: through the port's one guarded route function, with a response
 * written on its socket, so the key check, the refusals (401, 426, 404), the
 * request id and the access line are the same as for every request. A route
 * that upgrades takes the socket (`upgradeOf`); otherwise the connection
 * closes after the answer.
 *
 * A request that asks to upgrade to something else (curl's `Upgrade: h2c`)
 * is answered over HTTP/1.1 as before, without its body: Node reads no body
 * of an upgrade request (a GET is served as it was).
 */
export function serveUpgrade(req: IncomingMessage, socket: Duplex, head: Buffer, serve: (req: AnyRequest, res: AnyResponse) => void): void {
  upgrades.set(req, { req, socket, head });
  const res = new ServerResponse(req);
  res.shouldKeepAlive = false;
  res.assignSocket(socket as Socket);
  // An answer (a refusal) ends the connection; a route that upgrades writes no answer.
  res.once("finish", () => socket.end());
  socket.on("error", () => socket.destroy());
  serve(req, res);
}

/** The upgrade's socket and first bytes, for the route that takes the connection over (undefined for a request that did not ask to upgrade). */
export function upgradeOf(req: AnyRequest): Upgrade | undefined {
  return upgrades.get(req as IncomingMessage);
}

/** Whether the request asks for a WebSocket (`Upgrade: websocket`, RFC 6455 §4.1). */
export function wantsWebSocket(req: AnyRequest): boolean {
  const upgrade = req.headers.upgrade;
  return typeof upgrade === "string" && upgrade.toLowerCase() === "websocket";
}
