import type { JsonObject } from "../../response-state/response-ids.js";

/** One response a WebSocket made: the whole conversation it ends (the items a continuation starts from). */
interface Turn {
  readonly items: readonly JsonObject[];
  /** This response's own items (its new input and its output), as bytes of JSON. */
  readonly own: number;
}

/**
 * The responses one WebSocket made, for `previous_response_id` on that
 * socket: each one's conversation as Responses wire items (every earlier
 * turn's input and output, then its own), so a continuation is decoded
 * exactly as if the client had sent the whole conversation in `input`.
 * Nothing is stored: it lives as long as the socket.
 *
 * Bounded by bytes: a response's own new items count once (the arrays of
 * a chain share their items), and past `maxBytes` the oldest responses are
 * forgotten (continuing one of them is `previous_response_not_found`). One
 * response whose own items pass `maxBytes` is not kept at all.
 */
export interface SocketTurns {
  /** The conversation that ends with response `id`, if this socket made it and still keeps it. */
  conversation(id: string): readonly JsonObject[] | undefined;
  keep(id: string, items: readonly JsonObject[], ownBytes: number): void;
  readonly size: number;
}

export function createSocketTurns(maxBytes: number): SocketTurns {
  const turns = new Map<string, Turn>();
  let total = 0;
  return {
    conversation: (id) => turns.get(id)?.items,
    keep(id, items, own) {
      if (own > maxBytes) return;
      turns.set(id, { items, own });
      total += own;
      for (const [oldest, turn] of turns) {
        if (total <= maxBytes) break;
        turns.delete(oldest);
        total -= turn.own;
      }
    },
    get size() {
      return turns.size;
    },
  };
}
