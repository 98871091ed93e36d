import { EventEmitter } from "node:events";
import { PassThrough } from "node:stream";
import { createProviderGates, type ProviderGates } from "../../src/admission/provider-gate.js";
import { type Config, resolveConfig } from "../../src/config/config.js";
import type { ConfigInput } from "../../src/config/schema.js";
import type { ChatRequest } from "../../src/core/chat-request.js";
import type { ErrorCode } from "../../src/core/errors.js";
import type { AttemptOutcome } from "../../src/flow/observer.js";
import { createLogger } from "../../src/logging/logger.js";
import { type ChatPipeline, createChatPipeline, type DeltaStream } from "../../src/pipeline/chat-pipeline.js";
import { createStreamRegistry, type StreamRegistry } from "../../src/pipeline/stream-registry.js";
import { type Breakers, createBreakers } from "../../src/resilience/circuit-breaker.js";
import { openResumableStreams } from "../../src/resume/open-stream-log.js";
import type { Numbered, ResumableStreams } from "../../src/resume/resumable-streams.js";
import { createTargetOrder } from "../../src/routing/strategies.js";
import { createTargetStats } from "../../src/routing/target-stats.js";
import { createInProcessSimulator, type InProcessSimulator } from "../../src/simulator/in-process.js";
import { createTelemetry, type Telemetry } from "../../src/telemetry/telemetry.js";
import type { Principal } from "../../src/tenancy/principal.js";
import { createTenancy, type Tenancy } from "../../src/tenancy/tenancy.js";
import { createUpstreamClient, type UpstreamClient } from "../../src/upstream/http-client.js";
import type { UsageRecord } from "../../src/usage/usage-record.js";

/** What the pipeline told its stream observer about one attempt. */
export type AttemptEvent =
  | { readonly type: "started"; readonly requestId: string; readonly index: number; readonly target: string; readonly hedge: boolean; readonly retry: boolean }
  | { readonly type: "ended"; readonly requestId: string; readonly index: number; readonly target: string; readonly outcome: AttemptOutcome; readonly code?: ErrorCode };

export interface StreamOptions {
  readonly signal?: AbortSignal;
  readonly requestId?: string;
  readonly principal?: Principal;
  readonly maxTokens?: number;
  /** The client's deadline on the performance.now() clock. */
  readonly deadlineAt?: number;
  /** Filled with the stream's summary when it ends (the access line's fields). */
  readonly fields?: Record<string, unknown>;
}

/**
 * The back of the gateway in memory: the real pipeline, attempt loop,
 * breakers, provider gates, tenancy (memory store) and telemetry, wired as
 * app.ts wires them, in front of the in-process simulator. No socket, no
 * process: the fast tier's gateway.
 */
export interface InMemoryGateway {
  readonly sim: InProcessSimulator;
  readonly config: Config;
  readonly client: UpstreamClient;
  readonly pipeline: ChatPipeline;
  readonly gates: ProviderGates;
  readonly breakers: Breakers;
  readonly registry: StreamRegistry;
  readonly tenancy: Tenancy;
  /** Resumable streams over the in-process stream log, as app.ts opens them without Redis. */
  readonly resumable: ResumableStreams;
  /** Every attempt event so far, in order. */
  readonly attempts: readonly AttemptEvent[];
  /** Resolves with the first attempt event matching `predicate`, now or when it happens. */
  untilAttempt(predicate: (event: AttemptEvent) => boolean): Promise<AttemptEvent>;
  /** Resolves with the usage record of `requestId` once its settle reached the store (tenancy's own report). */
  untilSettled(requestId: string): Promise<UsageRecord>;
  /** Streams `text` as one user message to `alias`. */
  stream(alias: string, text: string, options?: StreamOptions): DeltaStream;
  /** The same as a resumable stream: numbered deltas, stored as they are handed out; `client` aborting detaches it. */
  streamResumable(alias: string, text: string, client: AbortSignal): AsyncGenerator<Numbered, void, undefined>;
  /** Every log line, parsed. */
  logs(): Array<Record<string, unknown>>;
  close(): Promise<void>;
}

export interface InMemoryGatewayOptions {
  /** alias → simulator model (knobs after `?`) on one OpenAI-format provider whose breaker never opens. */
  readonly models?: Record<string, string>;
  /** The whole routing section instead, given the simulator's base URLs. */
  readonly routing?: (sim: InProcessSimulator) => Pick<ConfigInput, "providers" | "models">;
  readonly auth?: ConfigInput["auth"];
  readonly resume?: ConfigInput["resume"];
  readonly env?: NodeJS.ProcessEnv;
  /** Backoff jitter and routing draws; 0 by default (retries without backoff), so only tests about backoff wait for one. */
  readonly random?: () => number;
  /** The tenant store's clock (epoch ms). */
  readonly storeClock?: () => number;
}

export function request(alias: string, text: string, maxTokens?: number): ChatRequest {
  return {
    model: alias,
    messages: [{ role: "user", content: [{ type: "text", text }] }],
    tools: [],
    sampling: { stop: [], ...(maxTokens === undefined ? {} : { maxTokens }) },
    metadata: { labels: {} },
  };
}

export function createInMemoryGateway(options: InMemoryGatewayOptions = {}): InMemoryGateway {
  const sim = createInProcessSimulator();
  const models = options.models ?? { sim: "sim-1" };
  const config = resolveConfig(
    {
      log: { level: "debug" },
      ...(options.auth ? { auth: options.auth } : {}),
      ...(options.resume ? { resume: options.resume } : {}),
      ...(options.routing?.(sim) ?? {
        providers: { simulator: { kind: "openai", baseUrl: sim.openAiBaseUrl, breaker: { failures: 10_000 } } },
        models: Object.fromEntries(Object.entries(models).map(([alias, model]) => [alias, { provider: "simulator", model }])),
      }),
    },
    options.env ?? {},
  );
  let text = "";
  const sink = new PassThrough();
  sink.on("data", (chunk: Buffer) => (text += chunk.toString("utf8")));
  const logger = createLogger("debug", sink);

  const client = createUpstreamClient({ dispatcher: sim.dispatcher });
  const registry = createStreamRegistry();
  const gates = createProviderGates();
  const breakers = createBreakers();
  gates.configure(config.providers);
  breakers.configure(config.providers);
  const random = options.random ?? (() => 0);
  const stats = createTargetStats();
  const telemetry = createTelemetry({
    config: config.telemetry,
    env: {},
    logger,
    sources: { activeStreams: () => registry.active, queues: () => [], breakers: () => [], connections: () => [] },
  });

  const attempts: AttemptEvent[] = [];
  const changes = new EventEmitter();
  const record = (event: AttemptEvent) => {
    attempts.push(event);
    changes.emit("attempt", event);
  };
  const observed: Telemetry = {
    ...telemetry,
    stream(req) {
      const inner = telemetry.stream(req);
      return {
        ...inner,
        attemptStarted(info) {
          record({ type: "started", requestId: req.requestId, index: info.index, target: info.target.key, hedge: info.hedge, retry: info.retry });
          return inner.attemptStarted(info);
        },
        attemptEnded(r) {
          inner.attemptEnded(r);
          record({ type: "ended", requestId: req.requestId, index: r.index, target: r.target.key, outcome: r.outcome, ...(r.error ? { code: r.error.code } : {}) });
        },
      };
    },
  };

  const settledRecords: UsageRecord[] = [];
  const tenancy = createTenancy({
    config: () => config,
    logger,
    observer: {
      usageRecorded: ({ record: usage }) => {
        settledRecords.push(usage);
        changes.emit("settled", usage);
      },
    },
    ...(options.storeClock ? { storeClock: options.storeClock } : {}),
  });
  const pipeline = createChatPipeline({
    config: () => config,
    client,
    telemetry: observed,
    registry,
    gates,
    breakers,
    stats,
    order: createTargetOrder({ stats, random }),
    random,
    tenancy,
  });
  const resumable = openResumableStreams(config.resume, logger, tenancy.redis);
  let requests = 0;
  const stream = (alias: string, message: string, streamOptions: StreamOptions = {}) =>
    pipeline.stream(request(alias, message, streamOptions.maxTokens), {
      signal: streamOptions.signal ?? new AbortController().signal,
      requestId: streamOptions.requestId ?? `req-${++requests}`,
      edge: "memory",
      ...(streamOptions.principal ? { principal: streamOptions.principal } : {}),
      ...(streamOptions.fields ? { fields: streamOptions.fields } : {}),
      ...(streamOptions.deadlineAt === undefined ? {} : { deadlineAt: streamOptions.deadlineAt }),
    });

  return {
    sim,
    config,
    client,
    pipeline,
    gates,
    breakers,
    registry,
    tenancy,
    resumable,
    attempts,
    untilAttempt(predicate) {
      const seen = attempts.find(predicate);
      if (seen) return Promise.resolve(seen);
      return new Promise((resolve) => {
        const check = (event: AttemptEvent) => {
          if (!predicate(event)) return;
          changes.off("attempt", check);
          resolve(event);
        };
        changes.on("attempt", check);
      });
    },
    untilSettled(requestId) {
      const seen = settledRecords.find((r) => r.requestId === requestId);
      if (seen) return Promise.resolve(seen);
      return new Promise((resolve) => {
        const check = (usage: UsageRecord) => {
          if (usage.requestId !== requestId) return;
          changes.off("settled", check);
          resolve(usage);
        };
        changes.on("settled", check);
      });
    },
    stream,
    streamResumable: (alias, message, client) => resumable.run({ start: (signal) => stream(alias, message, { signal }), clientSignal: client }),
    logs: () =>
      text
        .split("\n")
        .filter(Boolean)
        .map((line) => JSON.parse(line) as Record<string, unknown>),
    async close() {
      await sim.close();
      await resumable.close();
      await client.close();
      await tenancy.close(0);
      await telemetry.shutdown();
    },
  };
}
