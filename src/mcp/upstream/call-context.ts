import { AsyncLocalStorage } from "node:async_hooks";

/**
 * What one upstream request carries down to the HTTP fetch that the SDK
 * makes for it. The SDK's transport is shared by every call on a
 * long-lived client, and its `fetch` has no per-request hook; the
 * request's async context is the one thing that reaches from
 * `client.request(…)` to the `fetch` it makes (and to the reading of
 * that answer's body), so the bound and the per-user bearer travel in it.
 */
export interface CallContext {
  /** Replaces any `Authorization` header for this call (per-user token); never logged. */
  readonly bearer?: string;
  /** Called once when this call's answer passed `mcp.maxResultBytes`; `read` is what was read by then. */
  readonly overflow: (read: number) => void;
}

const storage = new AsyncLocalStorage<CallContext>();

/** Runs `work` as one upstream call: its fetches see `context`. */
export function withCallContext<T>(context: CallContext, work: () => Promise<T>): Promise<T> {
  return storage.run(context, work);
}

/** Runs `work` outside any call (a long-lived client's connect and its notification stream belong to no caller). */
export function outsideCall<T>(work: () => Promise<T>): Promise<T> {
  return storage.exit(work);
}

export function currentCall(): CallContext | undefined {
  return storage.getStore();
}
