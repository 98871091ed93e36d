import type { StreamChatResponse } from "../../gen/sluice/v1/chat_service_pb.js";
import type { RequestRecord } from "../../src/simulator/records.js";
import { simulatedTokens } from "../../src/simulator/text.js";
import { chatClient, grpcJsStream, transports, userRequest } from "./clients.js";
import type { Harness } from "./harness.js";

export const CANCEL_CLIENTS = ["grpc (connect-node, h2)", "connect (connect-node, HTTP/1.1)", "grpc-web (connect-node, HTTP/1.1)", "grpc (@grpc/grpc-js)"] as const;
export type CancelClient = (typeof CANCEL_CLIENTS)[number];

export interface CancelOutcome {
  /** Upstream text deltas the client had received when it cancelled (counted by their text: messages may join several). */
  readonly received: number;
  /** The simulator's record once it saw the connection close. */
  readonly record: RequestRecord;
}

/**
 * Starts a stream whose upstream writes `after` tokens and then stalls
 * forever, cancels it from the client once the text of `after` tokens has
 * arrived (the gRPC edge may send tokens that arrived together as one
 * message), and
 * waits (on the simulator's own event) until the upstream connection is
 * seen closed. With the gateway's timeouts far away (FAR_TIMEOUTS), the
 * propagated cancel is the only thing that can close it: no assertion on
 * how fast that happened is needed, and none depends on the machine's speed.
 */
export async function cancelAfter(h: Harness, kind: CancelClient, tag: string, after: number): Promise<CancelOutcome> {
  const request = userRequest("sim", `#sim tokens=2000 fail=stall fail_at=${after} tag=${tag}`);
  const tokens = simulatedTokens(1, after);
  let text = "";
  // Whole upstream tokens in the text so far.
  const received = () => {
    let n = 0;
    for (let at = 0; n < tokens.length && text.startsWith(tokens[n]!, at); at += tokens[n++]!.length);
    return n;
  };
  const closed = () => h.sim.records.waitFor((r) => r.tag === tag && r.endedAt !== undefined, 30_000);
  if (kind === "grpc (@grpc/grpc-js)") {
    const s = grpcJsStream(h.url, request);
    await new Promise<void>((resolve) => {
      s.call.on("data", (m: StreamChatResponse) => {
        if (m.delta.case !== "text") return;
        text += m.delta.value.text;
        if (received() === after) {
          s.call.cancel();
          resolve();
        }
      });
      s.call.on("error", () => resolve());
    });
    s.messages.catch(() => undefined);
    const record = await closed();
    s.close();
    return { received: received(), record };
  }
  const abort = new AbortController();
  const client = chatClient(transports(h.url)[kind]!);
  try {
    for await (const m of client.streamChat(request, { signal: abort.signal })) {
      if (m.delta.case !== "text") continue;
      text += m.delta.value.text;
      if (received() === after) abort.abort();
    }
  } catch {
    // The client's own abort error.
  }
  return { received: received(), record: await closed() };
}
