import { PassThrough } from "node:stream";
import { startSluice, type Sluice } from "../../src/app.js";
import { resolveConfig } from "../../src/config/config.js";
import type { ConfigInput } from "../../src/config/schema.js";
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
  /** Resolves with the first log line (already written or still to come) that matches. */
  waitForLog(match: (line: Record<string, unknown>) => boolean, timeoutMs?: number): Promise<Record<string, unknown>>;
  close(): Promise<void>;
}

export type ProviderKind = "openai" | "anthropic" | "gemini";
export const PROVIDER_KINDS: readonly ProviderKind[] = ["openai", "anthropic", "gemini"];

/** The simulator's base URL for a wire format. */
export function baseUrlFor(sim: Simulator, kind: ProviderKind): string {
  return kind === "openai" ? sim.openAiBaseUrl : kind === "anthropic" ? sim.anthropicBaseUrl : sim.geminiBaseUrl;
}

export interface HarnessOptions {
  /** Which wire format the gateway uses to talk to the simulator (default openai). */
  readonly kind?: ProviderKind;
  /** alias → simulator model string (knobs after `?`). */
  readonly models?: Record<string, string>;
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
      models: Object.fromEntries(Object.entries(models).map(([alias, model]) => [alias, { provider: "simulator", model }])),
    },
    options.env ?? {},
  );
  let text = "";
  const sink = new PassThrough();
  sink.on("data", (chunk: Buffer) => (text += chunk.toString("utf8")));
  const sluice = await startSluice({ config, logger: createLogger("debug", sink), port: 0 });
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
    waitForLog(match, timeoutMs = 10_000) {
      return new Promise((resolve, reject) => {
        const look = () => {
          const found = logs().find(match);
          if (!found) return;
          clearTimeout(timer);
          sink.off("data", look);
          resolve(found);
        };
        const timer = setTimeout(() => {
          sink.off("data", look);
          reject(new Error("no matching log line"));
        }, timeoutMs);
        sink.on("data", look);
        look();
      });
    },
    async close() {
      await sluice.close();
      await sim.close();
    },
  };
}
