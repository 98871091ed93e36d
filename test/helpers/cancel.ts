import { now } from "../../src/simulator/records.js";
import type { RequestRecord } from "../../src/simulator/records.js";
import type { Harness } from "./harness.js";
import { chatClient, grpcJsStream, transports, userRequest } from "./clients.js";

export const CANCEL_CLIENTS = [
  "grpc (connect-node, h2)",
  "connect (connect-node, HTTP/1.1)",
  "grpc-web (connect-node, HTTP/1.1)",
  "grpc (@grpc/grpc-js)",
] as const;
export type CancelClient = (typeof CANCEL_CLIENTS)[number];

export interface CancelOutcome {
  /** When the client cancelled (same clock as the simulator's records). */
  readonly cancelledAt: number;
  /** Text deltas the client had received when it cancelled. */
  readonly received: number;
  /** The simulator's record once it saw the connection close. */
  readonly record: RequestRecord;
}

/**
 * Starts a long stream, cancels it from the client after `after` text
 * deltas, and waits (on the simulator's own event) until the upstream
 * connection is seen closed.
 */
export async function cancelAfter(h: Harness, kind: CancelClient, tag: string, after: number): Promise<CancelOutcome> {
  const request = userRequest("sim", `#sim tokens=2000 delay_ms=5 tag=${tag}`);
  let received = 0;
  let cancelledAt = 0;
  if (kind === "grpc (@grpc/grpc-js)") {
    const s = grpcJsStream(h.url, request);
    await new Promise<void>((resolve) => {
      s.call.on("data", (m: { delta: { case: string } }) => {
        if (m.delta.case === "text" && ++received === after) {
          cancelledAt = now();
          s.call.cancel();
          resolve();
        }
      });
      s.call.on("error", () => resolve());
    });
    s.messages.catch(() => undefined);
    const record = await h.sim.records.waitFor((r) => r.tag === tag && r.endedAt !== undefined, 5000);
    s.close();
    return { cancelledAt, received, record };
  }
  const abort = new AbortController();
  const client = chatClient(transports(h.url)[kind]!);
  try {
    for await (const m of client.streamChat(request, { signal: abort.signal })) {
      if (m.delta.case === "text" && ++received === after) {
        cancelledAt = now();
        abort.abort();
      }
    }
  } catch {
    // The client's own abort error.
  }
  const record = await h.sim.records.waitFor((r) => r.tag === tag && r.endedAt !== undefined, 5000);
  return { cancelledAt, received, record };
}
