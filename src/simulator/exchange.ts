/**
 * One request as the simulation sees it, whatever carried it: a socket
 * (server.ts) or memory (in-process.ts). The simulation reads the request
 * and writes the response through `reply`; the carrier decides what "the
 * client left" and "the reader is full" mean on it, so every script and
 * knob behaves the same on both.
 */
export interface SimExchange {
  readonly method: string;
  /** Path and query, e.g. `/v1/chat/completions`. */
  readonly path: string;
  readonly headers: Readonly<Record<string, string | string[] | undefined>>;
  /** The request body; rejects when it cannot be read (too large, the client left). */
  readBody(): Promise<string>;
  readonly reply: SimReply;
}

/** Where one response goes, with the backpressure and the departures of its carrier. */
export interface SimReply {
  /** Aborted once the exchange is over: the response completed, or the client is gone. */
  readonly gone: AbortSignal;
  /** The whole response went out: what tells a completion from a client that left. */
  readonly finished: boolean;
  /** Nothing more can be written: the carrier was destroyed. */
  readonly closed: boolean;
  /** Sends the status and headers at once, before any body (a streamed body's headers must not wait for its first event). */
  head(status: number, headers: Readonly<Record<string, string | number>>): void;
  /** Queues bytes; false when the reader holds enough: wait for `drained()` before writing more. */
  write(bytes: Buffer): boolean;
  /** Resolves true once the reader wants more, false if the client left first. */
  drained(): Promise<boolean>;
  /** Completes the response, with its last bytes if given. */
  end(bytes?: Buffer): void;
  /**
   * Ends the connection without completing the response: `reset` as a TCP
   * RST (bytes the reader has not taken may be lost), `cut` as a FIN in the
   * middle of the body (what was sent arrives, then the body ends short).
   */
  disconnect(how: "reset" | "cut"): void;
}

/** A JSON response, whole. */
export function replyJson(reply: SimReply, status: number, body: unknown, headers: Readonly<Record<string, string>> = {}): void {
  const bytes = Buffer.from(JSON.stringify(body), "utf8");
  reply.head(status, { "content-type": "application/json", "content-length": bytes.length, ...headers });
  reply.end(bytes);
}
