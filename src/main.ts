#!/usr/bin/env node
import { parseArgs } from "node:util";
import { startSluice } from "./app.js";
import { ConfigError, type Config, loadConfigFile, resolveConfig } from "./config/config.js";
import { defaultConfig } from "./config/default-config.js";
import type { Logger } from "./logging/logger.js";
import { startSimulator, type Simulator } from "./simulator/server.js";

const USAGE = `usage: sluice [--config FILE] [--host HOST] [--port PORT]

  --config FILE  YAML configuration (default: built-in simulator, no keys needed)
  --host HOST    listen address (default 127.0.0.1, or server.host)
  --port PORT    listen port (default 8080, or PORT, or server.port)`;

function parsePort(value: string, source: string): number {
  const port = Number(value);
  if (!/^\d+$/.test(value) || port > 65_535) throw new ConfigError(`${source}: not a port number: ${value}`);
  return port;
}

/** How long a stopped gateway may take to release its last handles before it exits anyway. */
const EXIT_GRACE_MS = 5_000;

/**
 * Ends the process by letting the event loop run empty rather than calling
 * process.exit at once: pino's exit hook writes buffered lines
 * synchronously and retries a broken stdout (EPIPE) forever, so a
 * signalled gateway whose log reader had gone away never exited. Should a
 * handle be left open by mistake, the process still exits after
 * EXIT_GRACE_MS, naming what was left.
 */
function exitWhenIdle(logger: Logger): void {
  process.exitCode = 0;
  setTimeout(() => {
    logger.warn({ event: "server.exit_forced", resources: process.getActiveResourcesInfo() });
    process.exit(0);
  }, EXIT_GRACE_MS).unref();
}

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      config: { type: "string" },
      host: { type: "string" },
      port: { type: "string" },
      help: { type: "boolean", short: "h" },
    },
  });
  if (values.help) {
    process.stdout.write(`${USAGE}\n`);
    return;
  }
  const port = values.port !== undefined ? parsePort(values.port, "--port") : process.env.PORT ? parsePort(process.env.PORT, "PORT") : undefined;

  let simulator: Simulator | undefined;
  let config: Config;
  if (values.config !== undefined) {
    config = await loadConfigFile(values.config, process.env);
  } else {
    simulator = await startSimulator({ port: 0 });
    config = resolveConfig(defaultConfig(simulator.openAiBaseUrl), process.env, "built-in default configuration");
  }

  const sluice = await startSluice({ config, ...(values.host ? { host: values.host } : {}), ...(port !== undefined ? { port } : {}) });
  const url = sluice.server.url;
  sluice.logger.info({ event: "server.listening", url, models: [...config.models.keys()], simulator: simulator?.openAiBaseUrl });
  if (simulator) {
    process.stderr.write(
      [
        "",
        `Sluice is listening on ${url} with the built-in upstream simulator.`,
        "Try it:",
        `  npx buf curl --protocol connect --data '{"model":"demo","messages":[{"role":"ROLE_USER","content":[{"text":"Hello"}]}]}' ${url}/sluice.v1.ChatService/StreamChat`,
        `  npx buf curl --list-methods --http2-prior-knowledge ${url}`,
        "",
      ].join("\n"),
    );
  }

  // First signal: drain, then exit 0. Second signal: exit at once.
  let stopping = false;
  const onSignal = (signal: NodeJS.Signals) => {
    if (stopping) {
      sluice.logger.warn({ event: "server.forced_exit", signal });
      process.exit(1);
    }
    stopping = true;
    sluice.logger.info({ event: "server.signal", signal });
    void sluice
      .shutdown()
      .then(() => simulator?.close())
      .then(() => exitWhenIdle(sluice.logger));
  };
  process.on("SIGINT", onSignal);
  process.on("SIGTERM", onSignal);
}

main().catch((error: unknown) => {
  const message = error instanceof ConfigError ? error.message : error instanceof Error ? `${error.name}: ${error.message}` : String(error);
  process.stderr.write(`sluice: ${message}\n`);
  process.exit(1);
});
