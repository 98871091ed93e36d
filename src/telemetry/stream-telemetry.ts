import { type Attributes, type Context, ROOT_CONTEXT, type Span, SpanKind, SpanStatusCode, trace } from "@opentelemetry/api";
import type { CallFacts } from "../core/call-summary.js";
import type { ChatRequest } from "../core/chat-request.js";
import type { Delta, FinishReason, Usage } from "../core/delta.js";
import type { GatewayError } from "../core/errors.js";
import type { AttemptInfo, AttemptObserver, AttemptRecord, StreamObserver } from "../flow/observer.js";
import type { Logger } from "../logging/logger.js";
import type { LiveStatsSink } from "../stats/live-stats.js";
import type { Instruments } from "./metrics.js";
import type { Tracing } from "./tracing.js";

/** The GenAI conventions' provider names for our provider kinds. */
const PROVIDER_NAME = {
  openai: "openai",
  "openai-responses": "openai",
  anthropic: "anthropic",
  gemini: "gcp.gemini",
  "azure-openai": "azure.ai.openai",
  bedrock: "aws.bedrock",
  vertex: "gcp.vertex_ai",
} as const;

/** Most characters of prompt or completion put on a span when content capture is on. */
const CONTENT_CAP = 16_384;

/** What the pipeline tells telemetry about a stream when it starts. */
export interface StreamTelemetryRequest {
  readonly requestId: string;
  readonly edge: string;
  /** The configured alias, or `unknown`: never a client's free text. */
  readonly alias: string;
  readonly request: ChatRequest;
  /** The server span's context (or an incoming trace context): attempts are its children. */
  readonly parent?: Context;
  /** The call summary's facts (the access line's), filled at the end. */
  readonly facts?: CallFacts;
  /**
   * A call kept local (compliance/pii-policy.ts keptLocal): its prompt and
   * answer never go on a span, whatever `captureContent` says, since the
   * collector is no local target.
   */
  readonly withholdContent?: boolean;
  /** The GenAI operation (`gen_ai.operation.name`); default `chat`. An embedding call reports as a stream of one usage delta. */
  readonly operation?: "chat" | "embeddings";
}

export interface StreamTelemetryOptions extends StreamTelemetryRequest {
  readonly logger: Logger;
  readonly tracing: Tracing;
  readonly instruments?: Instruments;
  readonly captureContent: boolean;
  /** The console's live statistics (stats/live-stats.ts), fed from the same hooks. */
  readonly live?: LiveStatsSink;
}

type Target = AttemptInfo["target"];

function targetAttributes(target: Target): Attributes {
  return {
    "gen_ai.provider.name": PROVIDER_NAME[target.provider.kind],
    "sluice.provider": target.provider.name,
    "gen_ai.response.model": target.model,
  };
}

const servers = new WeakMap<Target["provider"], { readonly address: string; readonly port: number }>();

/** A provider's host and port, parsed once per configured provider (a URL parse costs more than the rest of the span's attributes). */
function serverOf(provider: Target["provider"]): { readonly address: string; readonly port: number } {
  let server = servers.get(provider);
  if (!server) {
    const url = new URL(provider.baseUrl);
    server = { address: url.hostname, port: Number(url.port || (url.protocol === "https:" ? 443 : 80)) };
    servers.set(provider, server);
  }
  return server;
}

function cut(text: string): string {
  return text.length > CONTENT_CAP ? `${text.slice(0, CONTENT_CAP)}…` : text;
}

/**
 * A cause for operators: its class, its code when it has one, and its
 * message cut short. Causes are our own errors or the transport's; neither
 * carries a key or a payload.
 */
function describeCause(cause: unknown): string | undefined {
  if (!(cause instanceof Error)) return undefined;
  const code = (cause as { code?: unknown }).code;
  const message = cause.message.length > 200 ? `${cause.message.slice(0, 200)}…` : cause.message;
  return `${cause.name}${typeof code === "string" ? ` ${code}` : ""}: ${message}`;
}

/**
 * Everything one stream reports, in one place: the CLIENT span per upstream
 * attempt (GenAI conventions), the GenAI server histograms and Sluice's
 * counters, the access line's fields and a `stream.end` debug line. Values
 * are gathered while the stream runs (a counter and a few fields per delta)
 * and recorded once, when it ends, whichever way it ends.
 */
export function createStreamTelemetry(options: StreamTelemetryOptions): StreamObserver {
  const { tracing, instruments, live } = options;
  // Both lines are debug: the access line already carries what they say, and a child logger per stream costs when nothing is written.
  const log = options.logger.isLevelEnabled("debug") ? options.logger.child({ requestId: options.requestId, edge: options.edge, alias: options.alias }) : undefined;
  const startedAt = performance.now();
  const spans = new Map<number, Span>();
  let committed: AttemptRecord | undefined;
  let records: readonly AttemptRecord[] = [];
  let firstDeltaAt: number | undefined;
  let usage: Usage | undefined;
  let finish: FinishReason | undefined;
  let responseId: string | undefined;
  let deltas = 0;
  let output = "";
  let ended = false;
  const captureContent = options.captureContent && options.withholdContent !== true;

  log?.debug({ event: "stream.accepted" });

  const operation = options.operation ?? "chat";
  const base: Attributes = { "gen_ai.operation.name": operation, "gen_ai.request.model": options.alias, "sluice.edge": options.edge };
  /** Names a series of `base` × target × `rest` for the summed counters (one key, one attribute set). */
  const seriesKey = (target: Target | undefined, ...rest: string[]): string => [options.alias, options.edge, target?.provider.kind ?? "", target?.provider.name ?? "", target?.model ?? "", ...rest].join("\0");

  function attemptSpan(info: AttemptInfo): Span {
    const name = `${operation} ${info.target.model}`;
    // A span that records nothing keeps only its ids: its attributes would be built for nobody.
    if (!tracing.recording) return tracing.tracer.startSpan(name, undefined, options.parent);
    const server = serverOf(info.target.provider);
    const s = options.request.sampling;
    const attributes: Attributes = {
      "gen_ai.operation.name": operation,
      "gen_ai.provider.name": PROVIDER_NAME[info.target.provider.kind],
      "gen_ai.request.model": info.target.model,
      "server.address": server.address,
      "server.port": server.port,
      "sluice.alias": options.alias,
      "sluice.attempt.index": info.index,
      "sluice.attempt.hedge": info.hedge,
      "sluice.attempt.retry": info.retry,
      ...(s.maxTokens === undefined ? {} : { "gen_ai.request.max_tokens": s.maxTokens }),
      ...(s.temperature === undefined ? {} : { "gen_ai.request.temperature": s.temperature }),
      ...(s.topP === undefined ? {} : { "gen_ai.request.top_p": s.topP }),
      ...(s.topK === undefined ? {} : { "gen_ai.request.top_k": s.topK }),
    };
    if (captureContent) {
      attributes["gen_ai.input.messages"] = cut(JSON.stringify(options.request.messages.map((m) => ({ role: m.role, parts: m.content }))));
    }
    return tracing.tracer.startSpan(name, { kind: SpanKind.CLIENT, attributes }, options.parent);
  }

  function endSpan(span: Span, error: GatewayError | undefined, extra: Attributes): void {
    span.setAttributes(extra);
    if (error) {
      span.setAttribute("error.type", error.code);
      span.setStatus({ code: SpanStatusCode.ERROR, message: error.message });
    }
    span.end();
  }

  return {
    attemptStarted(info) {
      const span = attemptSpan(info);
      spans.set(info.index, span);
      const kind = info.hedge ? "hedge" : info.retry ? "retry" : info.index > 0 ? "failover" : undefined;
      if (kind) live?.attempt(kind);
      if (instruments && kind) {
        const attrs = { ...base, ...targetAttributes(info.target) };
        if (kind === "hedge") instruments.hedgesStarted.add(1, attrs);
        else if (kind === "retry") instruments.retries.add(1, attrs);
        else instruments.failovers.add(1, attrs);
      }
      const observer: AttemptObserver = {
        headers: tracing.inject(trace.setSpan(options.parent ?? ROOT_CONTEXT, span)),
        admitted(waitMs) {
          instruments?.queueWait.record(waitMs / 1000, { "gen_ai.provider.name": PROVIDER_NAME[info.target.provider.kind], "sluice.provider": info.target.provider.name });
        },
        firstDelta() {
          span.addEvent("gen_ai.first_token");
        },
        afterAbort(deltas) {
          if (deltas > 0) instruments?.deltasAfterAbort.add(deltas, { ...base, ...targetAttributes(info.target) });
        },
      };
      return observer;
    },
    attemptEnded(record) {
      instruments?.series.add(instruments.attempts, seriesKey(record.target, record.outcome, record.error?.code ?? ""), 1, () => ({
        ...base,
        ...targetAttributes(record.target),
        "sluice.attempt.outcome": record.outcome,
        ...(record.error ? { "error.type": record.error.code } : {}),
      }));
      if (record.outcome === "shed") instruments?.shed.add(1, { "sluice.provider": record.target.provider.name, "sluice.shed.reason": "queue" });
      if (record.outcome === "committed") {
        if (record.hedge) {
          live?.hedgeWon();
          instruments?.hedgesWon.add(1, { ...base, ...targetAttributes(record.target) });
        }
        return; // its span ends with the stream
      }
      const span = spans.get(record.index);
      spans.delete(record.index);
      if (span) endSpan(span, record.error, { "sluice.attempt.outcome": record.outcome });
    },
    committed(all) {
      records = all;
      committed = all.findLast((r) => r.outcome === "committed");
    },
    delta(delta: Delta) {
      deltas++;
      live?.delta();
      switch (delta.type) {
        case "start":
          responseId = delta.responseId;
          return;
        case "usage":
          usage = delta;
          return;
        case "finish":
          finish = delta.reason;
          return;
        case "text":
          if (captureContent && output.length < CONTENT_CAP) output += delta.text;
          break;
        default:
          break;
      }
      if (firstDeltaAt === undefined) {
        firstDeltaAt = performance.now();
        live?.firstDelta(firstDeltaAt - startedAt);
      }
    },
    ended(error) {
      if (ended) return;
      ended = true;
      const now = performance.now();
      const outcome = error ? error.code : "ok";
      const target = committed?.target;
      const attrs: Attributes = { ...base, ...(target ? targetAttributes(target) : {}), "sluice.outcome": outcome, ...(error ? { "error.type": error.code } : {}) };
      const ttftMs = firstDeltaAt === undefined ? undefined : firstDeltaAt - startedAt;
      const clientAbort = error !== undefined && (error.code === "canceled" || error.code === "deadline_exceeded");
      live?.ended(outcome, clientAbort);

      // The committed attempt's span carries the response.
      const span = committed ? spans.get(committed.index) : undefined;
      if (span) {
        spans.delete(committed!.index);
        endSpan(span, error, {
          "sluice.attempt.outcome": "committed",
          // The model the target is configured with: adapters do not read the provider's own echo of it.
          "gen_ai.response.model": committed!.target.model,
          ...(responseId ? { "gen_ai.response.id": responseId } : {}),
          ...(finish ? { "gen_ai.response.finish_reasons": [finish] } : {}),
          ...(usage ? { "gen_ai.usage.input_tokens": usage.inputTokens, "gen_ai.usage.output_tokens": usage.outputTokens } : {}),
          ...(captureContent && output ? { "gen_ai.output.messages": cut(JSON.stringify([{ role: "assistant", parts: [{ type: "text", content: output }] }])) } : {}),
        });
      }
      // Attempts still open (the request ended while they ran) end as cancelled.
      for (const [, open] of spans) endSpan(open, error, { "sluice.attempt.outcome": "canceled" });
      spans.clear();

      if (instruments) {
        const { series } = instruments;
        // `outcome` is also the error type, when there is one.
        const key = seriesKey(target, outcome);
        series.add(instruments.streams, key, 1, () => attrs);
        if (deltas > 0) series.add(instruments.deltas, key, deltas, () => attrs);
        instruments.requestDuration.record((now - startedAt) / 1000, attrs);
        if (clientAbort) instruments.clientAborts.add(1, attrs);
        if (!error && ttftMs !== undefined) {
          instruments.timeToFirstToken.record(ttftMs / 1000, attrs);
          if (usage && usage.outputTokens > 1) instruments.timePerOutputToken.record((now - firstDeltaAt!) / 1000 / (usage.outputTokens - 1), attrs);
        }
        if (usage) {
          const tokens = (type: string, n: number) => series.add(instruments.tokens, `${key}\0${type}`, n, () => ({ ...attrs, "gen_ai.token.type": type }));
          tokens("input", usage.inputTokens);
          tokens("output", usage.outputTokens);
          if (usage.cachedInputTokens) tokens("cached_input", usage.cachedInputTokens);
          if (usage.reasoningTokens) tokens("reasoning", usage.reasoningTokens);
        }
      }

      const summary = {
        alias: options.alias,
        provider: target?.provider.name,
        model: target?.model,
        attempts: records.length,
        ...(records.length > 1 ? { tried: records.map((r) => `${r.target.key} ${r.outcome}${r.error ? ` ${r.error.code}` : ""} ${Math.round(r.ms)}ms`) } : {}),
        finishReason: finish,
        deltas,
        inputTokens: usage?.inputTokens,
        outputTokens: usage?.outputTokens,
        ttftMs: ttftMs === undefined ? undefined : Math.round(ttftMs * 10) / 10,
        outcome: error ? error.code : "completed",
        ...(error ? { errorCode: error.code, error: error.message, upstreamStatus: error.upstreamStatus, cause: describeCause(error.cause) } : {}),
      };
      if (options.facts) Object.assign(options.facts, summary);
      log?.debug({ event: "stream.end", ...summary, durationMs: Math.round((now - startedAt) * 10) / 10 });
    },
  };
}
