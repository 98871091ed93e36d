import { PassThrough } from "node:stream";
import { startSluice, type Sluice } from "../../src/app.js";
import { resolveConfig } from "../../src/config/config.js";
import type { ConfigInput, TimeoutsConfig } from "../../src/config/schema.js";
import { createLogger } from "../../src/logging/logger.js";
import { startSimulator, type Simulator } from "../../src/simulator/server.js";

export interface Harness {
  readonly sim: Simulator;
  readonly sluice: Sluice;
  /** Gateway base URL. */
  readonly url: string;
  /** Every log line the gateway wrote, parsed. */
  logs(): Array<Record<string, unknown>>;
  /** Raw log text, for "never contains" assertions. */
  logText(): string;
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

export type ProviderKind = "openai" | "anthropic" | "gemini";
export const PROVIDER_KINDS: readonly ProviderKind[] = ["openai", "anthropic", "gemini"];

/** The simulator's base URL for a wire format. */
export function baseUrlFor(sim: Simulator, kind: ProviderKind): string {
  return kind === "openai" ? sim.openAiBaseUrl : kind === "anthropic" ? sim.anthropicBaseUrl : sim.geminiBaseUrl;
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
}

/** A real simulator and a real gateway on loopback ports, with captured logs. */
export async function startHarness(options: HarnessOptions = {}): Promise<Harness> {
  const sim = await startSimulator();
  const models = options.models ?? { sim: "sim-1" };
  const config = resolveConfig(
    {
      log: { level: "debug" },
      ...(options.limits ? { limits: options.limits } : {}),
      ...(options.server ? { server: options.server } : {}),
      ...(options.facade ? { facade: options.facade } : {}),
      providers: { simulator: { kind: options.kind ?? "openai", baseUrl: baseUrlFor(sim, options.kind ?? "openai"), ...options.provider } },
      models: Object.fromEntries(
        Object.entries(models).map(([alias, m]) => [alias, typeof m === "string" ? { provider: "simulator", model: m } : { provider: "simulator", ...m }]),
      ),
    },
    options.env ?? {},
  );
  let text = "";
  const sink = new PassThrough();
  sink.on("data", (chunk: Buffer) => (text += chunk.toString("utf8")));
  const sluice = await startSluice({ config, logger: createLogger("debug", sink), port: 0 });
  return {
    sim,
    sluice,
    url: sluice.server.url,
    logText: () => text,
    logs: () =>
      text
        .split("\n")
        .filter(Boolean)
        .map((line) => JSON.parse(line) as Record<string, unknown>),
    async close() {
      await sluice.close();
      await sim.close();
    },
  };
}
