#!/usr/bin/env node
import { parseArgs } from "node:util";
import type { Config } from "./config/config.js";
import type { ConfigSource } from "./config/live-config.js";
import type { Logger } from "./logging/logger.js";
import type { Simulator } from "./simulator/server.js";

const USAGE = `usage: sluice [--config FILE] [--host HOST] [--port PORT]
       sluice check-config FILE      (or: sluice --config FILE --check)
       sluice catalog [FILTER] [--provider NAME] [--json] [--config FILE]

  --config FILE  YAML configuration (default: built-in simulator, no keys needed);
                 SIGHUP reads it again and applies it without a restart
  --host HOST    listen address (default 127.0.0.1, or server.host)
  --port PORT    listen port (default 8080, or PORT, or server.port)
  --check        validate the configuration, report every problem, exit 1 if any

check-config FILE validates the whole file (schema, references between
aliases and providers, API key variables) and exits 0 when it would start.

catalog prints the model catalog (prices, limits, capabilities) whose entries
targets inherit: FILTER keeps ids containing it; with --config, the catalog
that file uses (its catalog.file over the built-in one).`;

/** A command line the gateway does not understand: the message, then the usage. */
class UsageError extends Error {
  override readonly name = "UsageError";
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

/**
 * A log reader that goes away (its end of stdout or stderr closed) must not
 * take the gateway with it: writes then fail with EPIPE, which Node raises
 * as an unhandled 'error' event. Those lines are lost; serving goes on.
 */
function survivePipeBreaks(streams: NodeJS.WriteStream[]): void {
  for (const stream of streams) {
    stream.on("error", (error: NodeJS.ErrnoException) => {
      if (error.code !== "EPIPE") throw error;
    });
  }
}

async function main(): Promise<void> {
  survivePipeBreaks([process.stdout, process.stderr]);
  const { values, positionals } = parseArgs({
    options: {
      config: { type: "string" },
      host: { type: "string" },
      port: { type: "string" },
      check: { type: "boolean" },
      json: { type: "boolean" },
      provider: { type: "string" },
      help: { type: "boolean", short: "h" },
    },
    allowPositionals: true,
  });
  if (values.help) {
    process.stdout.write(`${USAGE}\n`);
    return;
  }
  const [command, ...rest] = positionals;
  if (command !== undefined && command !== "check-config" && command !== "catalog") throw new UsageError(`unknown command: ${command}`);
  if (command === "catalog") {
    if (rest.length > 1) throw new UsageError("catalog takes one FILTER at most");
    const { catalogCommand } = await import("./cli/catalog-command.js");
    const options = {
      ...(values.config === undefined ? {} : { config: values.config }),
      json: values.json === true,
      ...(values.provider === undefined ? {} : { provider: values.provider }),
      ...(rest[0] === undefined ? {} : { filter: rest[0] }),
    };
    process.exitCode = await catalogCommand(options, process.env, process.stdout);
    return;
  }
  if (command === "check-config" || values.check) {
    const file = command ? rest[0] : values.config;
    if (file === undefined || rest.length > 1) throw new UsageError(command ? "check-config needs one FILE" : "--check needs --config FILE");
    const { checkConfigCommand } = await import("./cli/check-config.js");
    process.exitCode = await checkConfigCommand(file, process.env, process.stdout);
    return;
  }
  await serve({ port: values.port, host: values.host, file: values.config });
}

/**
 * Starts the gateway. Its modules are imported here, not at the top of the
 * file: `--help` and `check-config` need none of them, and loading the whole
 * gateway made each of those commands cost 8-10 times a bare Node start.
 */
async function serve(options: { readonly port: string | undefined; readonly host: string | undefined; readonly file: string | undefined }): Promise<void> {
  const [{ startSluice }, { ConfigError, loadConfigFile, readConfigFile, resolveConfig }, { followConfigFile }, { defaultConfig }, { governHeapGrowth }, { startSimulator }, { npmLauncher, watchLauncher }] = await Promise.all([
    import("./app.js"),
    import("./config/config.js"),
    import("./config/config-watch.js"),
    import("./config/default-config.js"),
    import("./server/heap-growth.js"),
    import("./simulator/server.js"),
    import("./cli/launcher.js"),
  ]);
  const parsePort = (value: string, source: string): number => {
    const port = Number(value);
    if (!/^\d+$/.test(value) || port > 65_535) throw new ConfigError(`${source}: not a port number: ${value}`);
    return port;
  };
  const port = options.port !== undefined ? parsePort(options.port, "--port") : process.env.PORT ? parsePort(process.env.PORT, "PORT") : undefined;
  governHeapGrowth();
  const { file } = options;
  let simulator: Simulator | undefined;
  let config: Config;
  let source: ConfigSource | undefined;
  if (file !== undefined) {
    config = await loadConfigFile(file, process.env);
    // Reloads read the file with the same loader, and the environment as it is then.
    source = { name: file, load: () => readConfigFile(file, process.env) };
  } else {
    simulator = await startSimulator({ port: 0 });
    config = resolveConfig(defaultConfig(simulator.openAiBaseUrl), process.env, "built-in default configuration");
  }

  const sluice = await startSluice({
    config,
    ...(source ? { source } : {}),
    ...(options.host ? { host: options.host } : {}),
    ...(port !== undefined ? { port } : {}),
  });
  // SIGHUP re-reads the file; the process goes on serving whatever the file holds.
  process.on("SIGHUP", () => void sluice.config.reload("SIGHUP"));
  const watch = file !== undefined ? followConfigFile(sluice.config, file, sluice.logger) : undefined;
  const url = sluice.server.url;
  // First signal: drain, then exit 0. Second signal: exit at once. Handled from before the listening line: whoever
  // waits for that line may signal at once, and until a handler is installed the kernel's default for SIGTERM ends
  // the process on the spot, undrained (CI saw a gateway on a loaded machine killed so).
  let stopping = false;
  let launcher: { close(): void } | undefined;
  const stop = (cause: { signal: NodeJS.Signals } | { launcherGone: number }) => {
    if (stopping) {
      sluice.logger.warn({ event: "server.forced_exit", ...cause });
      process.exit(1);
    }
    stopping = true;
    if ("signal" in cause) sluice.logger.info({ event: "server.signal", signal: cause.signal });
    launcher?.close();
    watch?.close();
    void sluice
      .shutdown()
      .then(() => simulator?.close())
      .then(() => exitWhenIdle(sluice.logger));
  };
  process.on("SIGINT", (signal) => stop({ signal }));
  process.on("SIGTERM", (signal) => stop({ signal }));
  // The banner goes out before the listening line: whoever waits for that line may close the pipes at once.
  process.stderr.write(startBanner({ url, simulator: simulator !== undefined, console: config.console.access !== "off", file }));
  sluice.logger.info({ event: "server.listening", url, pid: process.pid, models: [...config.models.keys()], simulator: simulator?.openAiBaseUrl });
  sluice.logger.flush();

  // npm passes on SIGINT and SIGTERM only: a gateway whose npm went away (a SIGHUP to `npm start`, a SIGTERM to
  // `npx sluice`) stops as on SIGTERM rather than run on, orphaned, with nobody holding its pid.
  const launcherPid = npmLauncher(process.env, process.ppid);
  launcher =
    launcherPid === undefined
      ? undefined
      : watchLauncher(launcherPid, () => {
          sluice.logger.warn({
            event: "server.launcher_gone",
            launcherPid,
            pid: process.pid,
            message: `npm (pid ${launcherPid}), which started this gateway, has gone; draining and exiting. npm passes on only SIGINT and SIGTERM: send SIGHUP to the gateway's own pid (${process.pid}) to reload`,
          });
          stop({ launcherGone: launcherPid });
        });
}

/**
 * What a person starting the gateway reads on stderr: where it listens,
 * its pid (the one SIGHUP reloads, not npm's), the console, and on the
 * built-in default, commands that work as printed: curl, and buf through
 * its package name (`npx buf` resolves only where @bufbuild/buf is
 * installed, as in this repository; an installed sluice has it not).
 */
function startBanner(options: { readonly url: string; readonly simulator: boolean; readonly console: boolean; readonly file: string | undefined }): string {
  const { url } = options;
  const chat = `{"model":"demo","stream":true,"messages":[{"role":"user","content":"Hello"}]}`;
  const rpc = `{"model":"demo","messages":[{"role":"ROLE_USER","content":[{"text":"Hello"}]}]}`;
  return [
    "",
    `Sluice is listening on ${url} (pid ${process.pid})${options.simulator ? " with the built-in upstream simulator" : ""}.`,
    ...(options.console ? [`Console: ${url}/console/`] : []),
    ...(options.file !== undefined ? [`Reload ${options.file}: kill -HUP ${process.pid} (this pid: npm passes on only SIGINT and SIGTERM)`] : []),
    ...(options.simulator
      ? [
          "Try it:",
          `  curl --no-buffer ${url}/v1/chat/completions -H 'content-type: application/json' -d '${chat}'`,
          `  npx @bufbuild/buf curl --protocol connect --data '${rpc}' ${url}/sluice.v1.ChatService/StreamChat`,
          `  npx @bufbuild/buf curl --list-methods --http2-prior-knowledge ${url}`,
        ]
      : []),
    "",
    "",
  ].join("\n");
}

main().catch(async (error: unknown) => {
  if (error instanceof UsageError) {
    process.stderr.write(`sluice: ${error.message}\n${USAGE}\n`);
    process.exit(2);
  }
  const { ConfigError } = await import("./config/config.js");
  const message = error instanceof ConfigError ? error.message : error instanceof Error ? `${error.name}: ${error.message}` : String(error);
  process.stderr.write(`sluice: ${message}\n`);
  process.exit(1);
});
