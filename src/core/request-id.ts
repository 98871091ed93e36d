import { randomUUID } from "node:crypto";

/** The longest caller-given request id kept; a longer one is replaced. */
export const MAX_REQUEST_ID_CHARS = 128;

const SAFE_ID = new RegExp(`^[A-Za-z0-9._:-]{1,${MAX_REQUEST_ID_CHARS}}$`);

/**
 * The id that ties a request's log lines, response header and upstream call
 * together. A caller's own `x-request-id` is kept when it is a plain token,
 * so traces join across services; anything else is replaced, never echoed.
 */
export function requestIdFrom(incoming: string | null | undefined): string {
  if (incoming && SAFE_ID.test(incoming)) return incoming;
  // randomUUID draws from a cached entropy pool: cheaper per call than randomBytes.
  return `req_${randomUUID().replaceAll("-", "")}`;
}
