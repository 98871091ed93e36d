import type { CallContext } from "../../call/call-layer.js";
import type { Exchange } from "../../http/exchange.js";

/** An HTTP exchange as the call layer's context: its id, its signal, its trace and access-line fields. */
export function httpCall(exchange: Exchange, edge: string): CallContext {
  return { requestId: exchange.requestId, edge, signal: exchange.signal, trace: exchange.trace(), fields: exchange.fields };
}
