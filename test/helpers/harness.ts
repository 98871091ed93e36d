import { PassThrough } from "node:stream";
import type { MetricReader } from "@opentelemetry/sdk-metrics";
import type { SpanExporter } from "@opentelemetry/sdk-trace";
import { type Sluice, startSluice } from "../../src/app.js";
import { resolveConfig } from "../../src/config/config.js";
import type { ConfigInput, TimeoutsConfig } from "../../src/config/schema.js";
import type { Timers } from "../../src/core/timers.js";
import type { TenancyObserver } from "../../src/flow/observer.js";
import type { HealthState } from "../../src/health/health-state.js";
import { createLogger } from "../../src/logging/logger.js";
import { createInProcessSimulator } from "../../src/simulator/in-process.js";
import { type Simulator, startSimulator } from "../../src/simulator/server.js";
import { createUpstreamClient } from "../../src/upstream/http-client.js";
import { baseUrlFor, type ProviderKind, simulatedProvider } from "./simulated-providers.js";

export interface Harness {
  readonly sim: Simulator;
  readonly sluice: Sluice;
  /** Gateway base URL. */
  readonly url: string;
  /** Every log line the gateway wrote, parsed. */
  logs(): Array<Record<string, unknown>>;
  /** Raw log text, for "never contains" assertions. */
  logText(): string;
  /** Resolves with the first log line matching `predicate`, now or when it is written; rejects after `timeoutMs`. */
  waitForLog(predicate: (line: Record<string, unknown>) => boolean, timeoutMs?: number): Promise<Record<string, unknown>>;
  close(): Promise<void>;
}

/**
 * Upstream timeouts no test run comes near, however loaded the machine: a
 * test that is about one timeout shortens only that one, so nothing else can
 * end its stream, and a stalled upstream can only be closed by the cause
 * under test (a cancel, a deadline, a shutdown).
 */
export const FAR_TIMEOUTS: TimeoutsConfig = {
  connectMs: 60_000,
  headersMs: 60_000,
  firstTokenMs: 60_000,
  idleMs: 60_000,
  totalMs: 120_000,
};

/** A gateway alias: the simulator model string (knobs after `?`), optionally with its own timeouts. */
export type HarnessModel = string | { readonly model: string; readonly timeouts: Partial<TimeoutsConfig> };

export type { ProviderKind };
/** The three original wire formats: the suites that test a gateway feature run over each. */
export const PROVIDER_KINDS: readonly ProviderKind[] = ["openai", "anthropic", "gemini"];
/** Every wire format the simulator speaks: the wire suites (streaming, tools, reasoning, errors, cancellation, usage) run over each. */
export const WIRE_KINDS: readonly ProviderKind[] = [...PROVIDER_KINDS, "azure-openai", "bedrock", "vertex"];

export { baseUrlFor, simulatedProvider };

/** The credentials every simulated provider reads, so a suite's own `routing` may use any wire kind. */
function simulatedEnv(sim: Simulator): Record<string, string> {
  return Object.assign({}, ...WIRE_KINDS.map((kind) => simulatedProvider(sim, kind).env)) as Record<string, string>;
}

export interface HarnessOptions {
  /** Which wire format the gateway uses to talk to the simulator (default openai). */
  readonly kind?: ProviderKind;
  /** alias → simulator model string (knobs after `?`), or that with per-alias timeouts. */
  readonly models?: Record<string, HarnessModel>;
  readonly provider?: Partial<ConfigInput["providers"][string]>;
  readonly env?: NodeJS.ProcessEnv;
  readonly limits?: ConfigInput["limits"];
  readonly server?: ConfigInput["server"];
  readonly facade?: ConfigInput["facade"];
  /** Per-alias settings beyond the model (e.g. dropUnsupportedParams). */
  readonly aliasOptions?: Record<string, Pick<ConfigInput["models"][string], "dropUnsupportedParams" | "pii" | "localOnly" | "cache">>;
  /**
   * The whole routing configuration, for suites that need several
   * providers or targets; replaces `models`, `kind` and `provider`. Given
   * the simulator, so base URLs can point at it.
   */
  readonly routing?: (sim: Simulator) => Pick<ConfigInput, "providers" | "models">;
  /** The breakers' clock (tests move it instead of sleeping). */
  readonly clock?: () => number;
  /** The routing strategies' random source. */
  readonly random?: () => number;
  readonly telemetry?: ConfigInput["telemetry"];
  /** Spans go here (an in-memory exporter) instead of nowhere. */
  readonly spanExporter?: SpanExporter;
  /** An extra metric reader (tests read the SDK's aggregation directly). */
  readonly metricReader?: MetricReader;
  /** Virtual keys and the admin key (`env` holds their variables). */
  readonly auth?: ConfigInput["auth"];
  /** Redis for limits, spend and usage. */
  readonly store?: ConfigInput["store"];
  /** The response cache's shared settings. */
  readonly cache?: ConfigInput["cache"];
  /** The spend ledger's settings. */
  readonly ledger?: ConfigInput["ledger"];
  /** Budget alerts. */
  readonly alerts?: ConfigInput["alerts"];
  /** The model catalog's operator file. */
  readonly catalog?: ConfigInput["catalog"];
  /** The OpenAI Batch API's limits and concurrency. */
  readonly batch?: ConfigInput["batch"];
  /** Custom PII detectors and the audit log. */
  readonly compliance?: ConfigInput["compliance"];
  /** Resumable streams' grace, retention and bounds. */
  readonly resume?: ConfigInput["resume"];
  /** Stored responses and the WebSocket mode of /v1/responses. */
  readonly responses?: ConfigInput["responses"];
  /** What tenancy reports. */
  readonly observer?: TenancyObserver;
  /** The tenant store's clock (tests move it instead of sleeping). */
  readonly storeClock?: () => number;
  /** The console section (access, maxWatchers). */
  readonly console?: ConfigInput["console"];
  /** The MCP gateway's servers and bounds. */
  readonly mcp?: ConfigInput["mcp"];
  /** The live statistics' clock and WatchStats' timers (tests/helpers/manual-timers.ts). */
  readonly timers?: Timers;
  /** The tenancy heartbeat's clock and timer (stream leases). */
  readonly leaseTimers?: Timers;
  /** Where the built console is read from (default dist/console). */
  readonly consoleDir?: string;
  /** `in-process`: the simulator behind an undici Dispatcher, no upstream socket (the gateway's own port stays real). */
  readonly upstream?: "loopback" | "in-process";
}

/** A real simulator and a real gateway on loopback ports, with captured logs. */
export async function startHarness(options: HarnessOptions = {}): Promise<Harness> {
  const inProcess = options.upstream === "in-process" ? createInProcessSimulator() : undefined;
  const sim: Simulator = inProcess ?? (await startSimulator());
  const models = options.models ?? { sim: "sim-1" };
  const config = resolveConfig(
    {
      log: { level: "debug" },
      ...(options.limits ? { limits: options.limits } : {}),
      ...(options.server ? { server: options.server } : {}),
      ...(options.facade ? { facade: options.facade } : {}),
      ...(options.telemetry ? { telemetry: options.telemetry } : {}),
      ...(options.auth ? { auth: options.auth } : {}),
      ...(options.store ? { store: options.store } : {}),
      ...(options.cache ? { cache: options.cache } : {}),
      ...(options.ledger ? { ledger: options.ledger } : {}),
      ...(options.catalog ? { catalog: options.catalog } : {}),
      ...(options.alerts ? { alerts: options.alerts } : {}),
      ...(options.batch ? { batch: options.batch } : {}),
      ...(options.compliance ? { compliance: options.compliance } : {}),
      ...(options.resume ? { resume: options.resume } : {}),
      ...(options.responses ? { responses: options.responses } : {}),
      ...(options.console ? { console: options.console } : {}),
      ...(options.mcp ? { mcp: options.mcp } : {}),
      // Suites that provoke failures on purpose would trip the circuit
      // breaker; breaker tests configure one of their own.
      ...(options.routing?.(sim) ?? {
        providers: {
          simulator: { ...simulatedProvider(sim, options.kind ?? "openai").provider, breaker: { failures: 10_000 }, ...options.provider },
        },
        models: Object.fromEntries(
          Object.entries(models).map(([alias, m]) => [alias, typeof m === "string" ? { provider: "simulator", model: m, ...options.aliasOptions?.[alias] } : { provider: "simulator", ...m, ...options.aliasOptions?.[alias] }]),
        ),
      }),
    },
    { ...simulatedEnv(sim), ...options.env },
  );
  let text = "";
  const sink = new PassThrough();
  sink.on("data", (chunk: Buffer) => (text += chunk.toString("utf8")));
  const sluice = await startSluice({
    config,
    logger: createLogger("debug", sink),
    port: 0,
    ...(options.clock ? { clock: options.clock } : {}),
    ...(options.random ? { random: options.random } : {}),
    env: { ...simulatedEnv(sim), ...options.env },
    telemetry: { ...(options.spanExporter ? { spanExporter: options.spanExporter } : {}), ...(options.metricReader ? { metricReaders: [options.metricReader] } : {}) },
    ...(options.observer ? { tenancyObserver: options.observer } : {}),
    ...(options.storeClock ? { storeClock: options.storeClock } : {}),
    ...(options.timers ? { timers: options.timers } : {}),
    ...(options.leaseTimers ? { leaseTimers: options.leaseTimers } : {}),
    ...(options.consoleDir ? { consoleDir: options.consoleDir } : {}),
    ...(inProcess ? { upstream: createUpstreamClient({ dispatcher: inProcess.dispatcher }) } : {}),
  });
  await untilReady(sluice.server.health);
  const logs = () =>
    text
      .split("\n")
      .filter(Boolean)
      .map((line) => JSON.parse(line) as Record<string, unknown>);
  return {
    sim,
    sluice,
    url: sluice.server.url,
    logText: () => text,
    logs,
    waitForLog(predicate, timeoutMs = 30_000) {
      return new Promise((resolve, reject) => {
        const check = () => {
          const found = logs().find(predicate);
          if (!found) return;
          clearTimeout(timer);
          sink.off("data", check);
          resolve(found);
        };
        const timer = setTimeout(() => {
          sink.off("data", check);
          reject(new Error(`no matching log line within ${timeoutMs} ms`));
        }, timeoutMs);
        sink.on("data", check);
        check();
      });
    },
    async close() {
      await sluice.close();
      await sim.close();
    },
  };
}

/**
 * Waits until the gateway reports ready (a fail-closed store connects
 * asynchronously), as a load balancer would before sending it traffic.
 */
async function untilReady(health: HealthState, timeoutMs = 60_000): Promise<void> {
  const signal = AbortSignal.timeout(timeoutMs);
  while (!health.ready) {
    if (signal.aborted || health.closed) throw new Error(`gateway not ready within ${timeoutMs} ms (waiting for ${health.waitingFor.join(", ")})`);
    await health.changed(signal);
  }
}
