import { GatewayError } from "../core/errors.js";

/** The refusal of a put past `responses.maxStoredPerKey`, worded alike by every store (the Responses edge answers it as a 400). */
export function quotaRefusal(maxStoredBytes: number): GatewayError {
  return new GatewayError("failed_precondition", `stored responses of this key would pass responses.maxStoredPerKey (${maxStoredBytes} bytes): delete some, or send store: false`);
}

/** A quota as a store reads it: fixed, or read at each put (the setting reloads live). */
export type StoredBytesLimit = number | (() => number);

export function limitOf(limit: StoredBytesLimit): number {
  return typeof limit === "number" ? limit : limit();
}
