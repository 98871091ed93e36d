import type { GatewayError } from "../core/errors.js";
import type { Delta, FinishReason, Usage } from "../core/delta.js";
import type { AttemptRecord } from "../flow/observer.js";
import type { Logger } from "./logger.js";

export interface StreamLogFields {
  readonly requestId: string;
  readonly edge: string;
  readonly alias: string;
}

/**
 * One stream's lifecycle in the logs: accepted, the attempt that committed,
 * first delta, and exactly one end line with outcome, serving target,
 * attempts, tokens and durations. The end is written once whichever path
 * gets there first (normal end, error, or the abort signal of a client that
 * left while we were blocked on a write).
 */
export interface StreamLog {
  /** The upstream attempts so far; the last committed one is the serving target. */
  attempts(records: readonly AttemptRecord[]): void;
  delta(delta: Delta): void;
  completed(): void;
  failed(error: GatewayError): void;
}

/**
 * A cause for operators: its class, its code when it has one (ECONNRESET,
 * UND_ERR_CONNECT_TIMEOUT), and its message, cut short. Causes are our own
 * errors or the transport's; neither carries a key or a payload.
 */
function describeCause(cause: unknown): string | undefined {
  if (!(cause instanceof Error)) return undefined;
  const code = (cause as { code?: unknown }).code;
  const message = cause.message.length > 200 ? `${cause.message.slice(0, 200)}…` : cause.message;
  return `${cause.name}${typeof code === "string" ? ` ${code}` : ""}: ${message}`;
}

export function createStreamLog(logger: Logger, fields: StreamLogFields): StreamLog {
  const log = logger.child(fields);
  const startedAt = performance.now();
  let firstDeltaAt: number | undefined;
  let usage: Usage | undefined;
  let finish: FinishReason | undefined;
  let deltas = 0;
  let ended = false;
  let tried: readonly AttemptRecord[] = [];
  const ms = (t: number) => Math.round((t - startedAt) * 10) / 10;

  log.info({ event: "stream.accepted" });

  function end(outcome: string, error?: GatewayError): void {
    if (ended) return;
    ended = true;
    const serving = tried.findLast((r) => r.outcome === "committed");
    const summary = {
      event: "stream.end",
      outcome,
      provider: serving?.target.provider.name,
      model: serving?.target.model,
      attempts: tried.length,
      ...(tried.length > 1 ? { tried: tried.map((r) => `${r.target.key} ${r.outcome}${r.error ? ` ${r.error.code}` : ""} ${Math.round(r.ms)}ms`) } : {}),
      finishReason: finish,
      deltas,
      inputTokens: usage?.inputTokens,
      outputTokens: usage?.outputTokens,
      ttftMs: firstDeltaAt === undefined ? undefined : ms(firstDeltaAt),
      durationMs: ms(performance.now()),
    };
    if (!error) log.info(summary);
    else {
      const level = error.code === "canceled" || error.code === "deadline_exceeded" ? "info" : "warn";
      log[level]({ ...summary, errorCode: error.code, error: error.message, upstreamStatus: error.upstreamStatus, cause: describeCause(error.cause) });
    }
  }

  return {
    attempts(records) {
      tried = records;
    },
    delta(delta) {
      deltas++;
      if (firstDeltaAt === undefined) {
        firstDeltaAt = performance.now();
        log.debug({ event: "stream.first_delta", ttftMs: ms(firstDeltaAt) });
      }
      if (delta.type === "usage") usage = delta;
      else if (delta.type === "finish") finish = delta.reason;
    },
    completed: () => end("completed"),
    failed: (error) => end(error.code, error),
  };
}
