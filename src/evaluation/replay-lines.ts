import type { LineExecutor } from "../batch/batch-runner.js";
import { randomHex } from "../batch/batch-store.js";
import type { CallContext, CallLayer } from "../call/call-layer.js";
import type { ChatRequest } from "../core/chat-request.js";
import { GatewayError, toGatewayError } from "../core/errors.js";
import type { AnswerSummary } from "../recording/answer-summary.js";
import type { Principal } from "../tenancy/principal.js";
import { answerOf, type PriceOf } from "./answer-call.js";
import type { Replayed } from "./evaluation-report.js";

/** The batch endpoint of an evaluation's replays: lines are recorded ChatRequests, results AnswerSummaries (not OpenAI's wire). */
export const REPLAY_ENDPOINT = "sluice/replay";

/** One replay line's body: the recorded request, its model already the candidate alias. */
export interface ReplayLine {
  readonly request: ChatRequest;
}

/** One replay line's result: the answer, or the error code and message. */
interface ReplayResult {
  readonly custom_id: string;
  readonly answer?: AnswerSummary;
  readonly error?: { readonly code: string; readonly message: string };
}

/** A result line read back for the report. */
export function replayedOf(text: string): [string, Replayed] | undefined {
  try {
    const r = JSON.parse(text) as ReplayResult;
    if (typeof r.custom_id !== "string") return undefined;
    return [r.custom_id, r.answer ? { ok: true, answer: r.answer } : { ok: false, code: r.error?.code ?? "unknown" }];
  } catch {
    return undefined;
  }
}

/**
 * How the batch queue runs an evaluation's line: the recorded request
 * against the candidate alias, as the evaluation's key, through the call
 * layer (limits, budget, usage record tagged with the batch, routing,
 * PII policy), at batch priority; the answer folded as the recording was
 * (answer-summary.ts), so the report compares like with like.
 */
export function createReplayLineExecutor(options: { readonly calls: CallLayer; readonly principalOf: (sha256: string) => Principal | undefined; readonly priceOf: PriceOf }): LineExecutor {
  const line = (customId: string, result: Omit<ReplayResult, "custom_id">) => JSON.stringify({ custom_id: customId, ...result });
  return {
    async run(batch, pending, signal) {
      const call: CallContext = { requestId: `eval_${randomHex()}`, edge: "evaluation", signal, tags: { batch_id: batch.id }, background: true };
      try {
        const principal = batch.owner === "" ? undefined : options.principalOf(batch.owner);
        if (batch.owner !== "" && !principal) throw new GatewayError("unauthenticated", "the key this evaluation runs as is no longer configured");
        const { request } = JSON.parse(pending.body) as ReplayLine;
        const answer = await answerOf(options.calls, request, principal, call, options.priceOf);
        return { result: { ok: true, text: line(pending.customId, { answer }) } };
      } catch (error) {
        const failure = toGatewayError(error);
        return { result: { ok: false, text: line(pending.customId, { error: { code: failure.code, message: failure.message.slice(0, 500) } }) }, stop: failure.code === "budget_exceeded" };
      }
    },
    notRun(_batch, pending) {
      return { ok: false, text: line(pending.customId, { error: { code: "budget_exceeded", message: "not run: an earlier replay of this evaluation was refused for the key's budget" } }) };
    },
  };
}

/** Runs each line with the executor its batch's endpoint calls for: replays here, OpenAI's wire otherwise. */
export function byEndpoint(replay: LineExecutor, other: LineExecutor): LineExecutor {
  const pick = (endpoint: string) => (endpoint === REPLAY_ENDPOINT ? replay : other);
  return {
    run: (batch, pending, signal) => pick(batch.endpoint).run(batch, pending, signal),
    notRun: (batch, pending) => pick(batch.endpoint).notRun(batch, pending),
  };
}
