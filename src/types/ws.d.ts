/**
 * The part of `ws` 8.x the gateway and its tests use. The package ships no
 * types and @types/ws would be one more dependency for a dozen lines; this
 * declares only what is called, so a call outside it fails to compile.
 */
declare module "ws" {
  import { EventEmitter } from "node:events";
  import type { ClientRequest, IncomingMessage } from "node:http";
  import type { Duplex } from "node:stream";

  export type RawData = Buffer | ArrayBuffer | Buffer[];

  export interface ClientOptions {
    readonly headers?: Record<string, string>;
    readonly maxPayload?: number;
    readonly perMessageDeflate?: boolean;
  }

  export class WebSocket extends EventEmitter {
    static readonly CONNECTING: 0;
    static readonly OPEN: 1;
    static readonly CLOSING: 2;
    static readonly CLOSED: 3;
    constructor(address: string, options?: ClientOptions);
    readonly readyState: 0 | 1 | 2 | 3;
    /** Bytes queued by send() and not yet handed to the socket. */
    readonly bufferedAmount: number;
    send(data: string | Buffer, cb?: (error?: Error) => void): void;
    ping(data?: Buffer | string, mask?: boolean, cb?: (error?: Error) => void): void;
    close(code?: number, reason?: string): void;
    terminate(): void;
    /** Stops reading from the socket (the peer's writes back up). */
    pause(): void;
    resume(): void;
    on(event: "message", listener: (data: RawData, isBinary: boolean) => void): this;
    on(event: "close", listener: (code: number, reason: Buffer) => void): this;
    on(event: "error", listener: (error: Error) => void): this;
    on(event: "open" | "ping" | "pong", listener: () => void): this;
    on(event: "unexpected-response", listener: (request: ClientRequest, response: IncomingMessage) => void): this;
    once(event: "message", listener: (data: RawData, isBinary: boolean) => void): this;
    once(event: "close", listener: (code: number, reason: Buffer) => void): this;
    once(event: "error", listener: (error: Error) => void): this;
    once(event: "open" | "ping" | "pong", listener: () => void): this;
    once(event: "unexpected-response", listener: (request: ClientRequest, response: IncomingMessage) => void): this;
  }

  export interface ServerOptions {
    readonly noServer: true;
    /** Largest message accepted; a larger one closes the connection with 1009. */
    readonly maxPayload: number;
    readonly perMessageDeflate?: boolean;
    readonly clientTracking?: boolean;
  }

  export class WebSocketServer extends EventEmitter {
    constructor(options: ServerOptions);
    handleUpgrade(request: IncomingMessage, socket: Duplex, head: Buffer, callback: (ws: WebSocket, request: IncomingMessage) => void): void;
  }

  export default WebSocket;
}
