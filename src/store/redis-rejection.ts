/**
 * Error replies that say the store cannot do its job as configured, not
 * that Redis is busy: waiting or retrying does not help, an operator must
 * change the topology, the ACL or the prefix. CROSSSLOT (a script's keys in
 * several slots: a cluster node behind a standalone configuration, or a
 * prefix without a hash tag), MOVED/ASK reaching the store (a standalone
 * client on a cluster node), NOPERM/NOAUTH/WRONGPASS (the ACL user lacks a
 * command or a key pattern, or the password is wrong), an unknown command
 * (a Redis too old, or a proxy that filters scripts), an ACL refusal of a
 * command a script runs ("ERR The user executing the script can't run…",
 * which a fallback used to hide). LOADING, BUSY, OOM, TRYAGAIN,
 * CLUSTERDOWN, MASTERDOWN and READONLY pass with time (a restart, a
 * failover) and are not rejections.
 */
const REJECTING_CODES = new Set(["CROSSSLOT", "MOVED", "ASK", "NOPERM", "NOAUTH", "WRONGPASS", "NOSCRIPT"]);

/** Messages of plain `ERR` replies that are rejections too (lower case). */
const REJECTING_ERR = ["unknown command", "non local key", "do not hash to the same slot", "cluster support disabled", "no permissions", "can't run this command", "can't access at least one of the"];

/**
 * The reply's code (its first word, e.g. `CROSSSLOT`, or `ERR` for the
 * plain ones above) when `error` is a rejection; undefined for anything
 * else: timeouts, lost connections, transient replies.
 */
export function redisRejection(error: unknown): string | undefined {
  if (!(error instanceof Error)) return undefined;
  // ioredis wraps a script's error reply: "ERR user_script:1: Script attempted to access a non local key…".
  const message = error.message;
  const code = /^[A-Z]+/.exec(message)?.[0];
  if (code === undefined) return undefined;
  if (REJECTING_CODES.has(code)) return code;
  if (code === "ERR" || code === "WRONGTYPE") {
    const lower = message.toLowerCase();
    if (REJECTING_ERR.some((part) => lower.includes(part))) return code;
  }
  return undefined;
}

/** A store that cannot work as configured, found at start: start fails with it. `code` as `redisRejection` gives it, or `TOPOLOGY`. */
export class StoreRejectedError extends Error {
  override readonly name = "StoreRejectedError";
  constructor(
    readonly code: string,
    message: string,
  ) {
    super(message);
  }
}
