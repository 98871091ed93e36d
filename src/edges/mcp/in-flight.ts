/**
 * The tool calls this replica is running, by session and JSON-RPC id, so
 * that a client's `notifications/cancelled` (a POST of its own, which the
 * stateless transport hands to a fresh SDK server that never saw the
 * request) aborts the call it names. Keyed by the sealed session id: a
 * caller can only name requests of its own session. A cancel that lands on
 * another replica than the call finds nothing here (no cross-replica
 * channel yet); closing the request's connection aborts it everywhere.
 */
export interface InFlight {
  /** Registers `ids` of `session` under `controller`; the returned function forgets them. */
  add(session: string, ids: readonly (string | number)[], controller: AbortController): () => void;
  cancel(session: string, id: string | number): boolean;
  readonly size: number;
}

export function createInFlight(): InFlight {
  const running = new Map<string, AbortController>();
  const keyOf = (session: string, id: string | number) => `${session}\u0000${typeof id}:${id}`;
  return {
    add(session, ids, controller) {
      const keys = ids.map((id) => keyOf(session, id));
      for (const key of keys) running.set(key, controller);
      return () => {
        for (const key of keys) if (running.get(key) === controller) running.delete(key);
      };
    },
    cancel(session, id) {
      const controller = running.get(keyOf(session, id));
      controller?.abort();
      return controller !== undefined;
    },
    get size() {
      return running.size;
    },
  };
}
