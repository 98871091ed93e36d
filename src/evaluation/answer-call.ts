import type { CallContext, CallLayer } from "../call/call-layer.js";
import type { Price } from "../config/settings.js";
import type { ChatRequest } from "../core/chat-request.js";
import { type AnswerSummary, createAnswerCapture } from "../recording/answer-summary.js";
import type { Principal } from "../tenancy/principal.js";
import { costMicros } from "../usage/cost.js";

/** The configured price of the target that answered (`provider/model`) under `alias`. */
export type PriceOf = (alias: string, target: string) => Price | undefined;

/**
 * Runs `request` through the call layer and folds its answer as a
 * recording is folded (answer-summary.ts), priced at the target that
 * answered: what a replay and a shadow call both compare with the
 * recorded answer. Rejects with the call's failure.
 */
export async function answerOf(calls: CallLayer, request: ChatRequest, principal: Principal | undefined, call: CallContext, priceOf: PriceOf): Promise<AnswerSummary> {
  const capture = createAnswerCapture();
  const stream = calls.stream(request, principal, call, { heartbeatMs: 0 });
  for await (const delta of stream.whole()) capture.observe(delta);
  const summary = capture.summary(undefined);
  return { ...summary, costMicros: costMicros(summary.usage, priceOf(request.model, summary.target)) };
}
