import type { GatewayError } from "../core/errors.js";
import type { Delta, FinishReason, Usage } from "../core/delta.js";
import type { Logger } from "./logger.js";

export interface StreamLogFields {
  readonly requestId: string;
  readonly edge: string;
  readonly alias: string;
  readonly provider: string;
  readonly model: string;
}

/**
 * One stream's lifecycle in the logs: accepted, upstream headers, first
 * delta, and exactly one end line with outcome, tokens and durations. The end
 * is written once whichever path gets there first (normal end, error, or the
 * abort signal of a client that left while we were blocked on a write).
 */
export interface StreamLog {
  upstreamHeaders(status: number): void;
  delta(delta: Delta): void;
  completed(): void;
  failed(error: GatewayError): void;
}

/**
 * A cause for operators: its class, its code when it has one (ECONNRESET,
 * UND_ERR_HEADERS_TIMEOUT), and its message, cut short. Causes are our own
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
  const ms = (t: number) => Math.round((t - startedAt) * 10) / 10;

  log.info({ event: "stream.accepted" });

  function end(outcome: string, error?: GatewayError): void {
    if (ended) return;
    ended = true;
    const summary = {
      event: "stream.end",
      outcome,
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
    upstreamHeaders(status) {
      log.debug({ event: "stream.upstream_headers", status, elapsedMs: ms(performance.now()) });
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
