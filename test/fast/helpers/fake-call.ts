import { unscreened } from "../../../src/compliance/screen-request.js";
import type { Config, ModelRoute, ProviderConfig, RouteTarget } from "../../../src/config/config.js";
import { createCallSummary } from "../../../src/core/call-summary.js";
import type { ChatMessage, ChatRequest } from "../../../src/core/chat-request.js";
import type { GatewayError } from "../../../src/core/errors.js";
import { QUIET_OBSERVER } from "../../../src/pipeline/quiet-observer.js";
import type { CallState } from "../../../src/pipeline/stage.js";
import type { StreamContext } from "../../../src/pipeline/stream-context.js";
import { createRouteTable } from "../../../src/routing/route-table.js";
import type { Allowance, ChargedUsage, TenantCharge } from "../../../src/tenancy/tenant-charge.js";
import { createUsageMeter, type UsageMeter } from "../../../src/usage/usage-meter.js";

/**
 * One call as a stage sees it, made by hand: a stage's test imports the
 * stage file and this, never the gateway (src/app.ts, config loading), so
 * the fast tier pays only for the modules the stage itself stands on.
 */

/** The alias every fake call asks for, unless its request names another. */
export const ALIAS = "a";

/** What of Config the stages read (redact: auth.teams and compliance.patterns; record: limits.maxAnswerBytes): the one cast to Config is from this. */
export interface StageConfig {
  readonly models: Config["models"];
  readonly auth: Pick<Config["auth"], "teams">;
  readonly compliance: Pick<Config["compliance"], "patterns">;
  readonly limits: Pick<Config["limits"], "maxAnswerBytes">;
}

export function text(role: ChatMessage["role"], words: string): ChatMessage {
  return { role, content: [{ type: "text", text: words }] };
}

export function request(messages: readonly ChatMessage[] = [text("user", "hi")], extra: Partial<ChatRequest> = {}): ChatRequest {
  return { model: ALIAS, messages, tools: [], sampling: { stop: [] }, metadata: { labels: {} }, ...extra };
}

/** A target on a provider that is never called: only the fields stages read are real. */
export function target(model: string, extra: Partial<RouteTarget> = {}): RouteTarget {
  const timeouts = { connectMs: 1_000, headersMs: 1_000, firstTokenMs: 1_000, idleMs: 1_000, totalMs: 1_000 };
  const provider: Pick<ProviderConfig, "name" | "kind" | "baseUrl" | "timeouts"> = { name: "p", kind: "openai", baseUrl: "http://127.0.0.1:9", timeouts };
  return { key: `p/${model}`, provider: provider as ProviderConfig, model, weight: 1, timeouts, ...extra };
}

export function route(extra: Partial<ModelRoute> = {}): ModelRoute {
  return { alias: ALIAS, targets: [target("m")], strategy: "priority", retry: { maxAttempts: 1, baseBackoffMs: 0, maxBackoffMs: 0 }, dropUnsupportedParams: false, ...extra };
}

/** Each TenantCharge call, in order, by method name. */
export interface FakeCharge extends TenantCharge {
  readonly calls: Array<{ readonly method: keyof TenantCharge; readonly args: readonly unknown[] }>;
  /** The arguments of every call to `method`. */
  argsOf(method: keyof TenantCharge): Array<readonly unknown[]>;
}

/** A charge that records what it is told; `refuse` makes `admit` reject with it, `allowance` is what a key budget would allow. */
export function fakeCharge(options: { readonly refuse?: GatewayError; readonly allowance?: Allowance } = {}): FakeCharge {
  const calls: FakeCharge["calls"] = [];
  const told = (method: keyof TenantCharge, ...args: unknown[]) => void calls.push({ method, args });
  return {
    calls,
    argsOf: (method) => calls.filter((c) => c.method === method).map((c) => c.args),
    admit(r: ModelRoute) {
      told("admit", r);
      return options.refuse ? Promise.reject(options.refuse) : Promise.resolve();
    },
    serving: (t: RouteTarget) => told("serving", t),
    end: (meter: ChargedUsage, reason?: GatewayError) => told("end", meter, reason),
    allowance: () => options.allowance,
  };
}

export interface FakeCallOptions {
  /** The alias's route; also the configuration's only model. */
  readonly route?: ModelRoute;
  /** Whether the `route` stage already ran (call.route set); default true. */
  readonly routed?: boolean;
  readonly request?: ChatRequest;
  readonly ctx?: Partial<StreamContext>;
  readonly charge?: TenantCharge;
  readonly meter?: UsageMeter;
  readonly operation?: CallState["operation"];
  readonly maxAnswerBytes?: number;
}

export interface FakeCall {
  readonly call: CallState;
  /** What `call.stop` was called with. */
  readonly stopped: GatewayError[];
  /** Aborts `call.signal`. */
  readonly controller: AbortController;
}

/** A call as the pipeline builds it before its first stage opens (chat-pipeline.ts), with `routed` the route already looked up. */
export function fakeCall(options: FakeCallOptions = {}): FakeCall {
  const aliasRoute = options.route ?? route();
  const config: StageConfig = {
    models: new Map([[aliasRoute.alias, aliasRoute]]),
    auth: { teams: new Map() },
    compliance: { patterns: [] },
    limits: { maxAnswerBytes: options.maxAnswerBytes ?? 1_048_576 },
  };
  const asked = options.request ?? request();
  const controller = new AbortController();
  const stopped: GatewayError[] = [];
  const call: CallState = {
    config: config as Config,
    routes: createRouteTable(config.models),
    ctx: { signal: new AbortController().signal, requestId: "req-1", edge: "test", ...options.ctx },
    summary: createCallSummary(),
    operation: options.operation ?? "chat",
    stop: (reason) => void stopped.push(reason),
    signal: controller.signal,
    meter: options.meter ?? createUsageMeter(() => call.request),
    request: asked,
    route: options.routed === false ? undefined : aliasRoute,
    charge: options.charge ?? fakeCharge(),
    observer: QUIET_OBSERVER,
    screened: unscreened(asked),
    cacheRequest: asked,
    restored: false,
    servedBy: undefined,
    cut: undefined,
  };
  return { call, stopped, controller };
}
