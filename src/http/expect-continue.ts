import type { AnyRequest, AnyResponse } from "./node-http.js";

/**
 * A request sent with `Expect: 100-continue` is invited to send its body
 * (`100 Continue`) only when a handler starts reading that body: not
 * before its headers were judged. Node invites every such request at once
 * unless a `checkContinue` listener takes over; then a body refused on
 * its declared length (413), its credentials (401) or its path (404)
 * was still invited, and a client that waits for the invitation sent
 * megabytes only to read the refusal.
 *
 * Whoever reads the body adds a `data` or `readable` listener (readBody,
 * an async iterator, a pipe): the first one sends the invitation. A
 * refusal sent first (its headers out) leaves the client uninvited, and
 * the lingering close that follows drops whatever it sends anyway.
 */
export function inviteBodyWhenRead(req: AnyRequest, res: AnyResponse): void {
  const onListener = (event: string | symbol) => {
    if (event !== "data" && event !== "readable") return;
    req.off("newListener", onListener);
    if (!res.headersSent && !res.writableEnded && !res.destroyed) res.writeContinue();
  };
  req.on("newListener", onListener);
}
