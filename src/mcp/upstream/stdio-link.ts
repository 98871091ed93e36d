import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { ToolListChangedNotificationSchema } from "@modelcontextprotocol/sdk/types.js";
import { clampDelay } from "../../core/timers.js";
import type { Logger } from "../../logging/logger.js";
import { CLIENT_INFO } from "./http-link.js";
import { type ServerLink, whileNotAborted } from "./server-link.js";
import { createStderrLog } from "./stderr-lines.js";
import { BoundedStdioTransport } from "./stdio-transport.js";

export interface StdioLinkOptions {
  readonly server: string;
  readonly command: string;
  readonly args: readonly string[];
  readonly env: Record<string, string>;
  readonly cwd?: string;
  readonly maxRestarts: number;
  readonly restartWindowMs: number;
  readonly maxStderrBytesPerSecond: number;
  readonly maxResultBytes: number;
  readonly timeoutMs: number;
  readonly log: Logger;
  readonly now: () => number;
  /** Its listing may have changed: its notification, or a new process. */
  readonly onListChanged: () => void;
}

/**
 * A server the gateway runs as a child: started at once, restarted when it
 * dies — at most `maxRestarts` times within `restartWindowMs`, after which
 * it stays `down` until the oldest restart leaves the window. Calls in
 * flight when it dies fail at once (the SDK rejects every pending request
 * when its transport closes); calls that arrive while it restarts wait for
 * the new process, bounded by their timeout. One process serves every
 * caller (stdio has no sessions).
 */
export function createStdioLink(options: StdioLinkOptions): ServerLink & { readonly pid: number | undefined; readonly stderrDropped: number } {
  const { server, log, now } = options;
  const stderr = createStderrLog(server, options.maxStderrBytesPerSecond, log, now);
  let current: Promise<Client> | undefined;
  let transport: BoundedStdioTransport | undefined;
  let state: "up" | "starting" | "down" = "starting";
  let lastError: string | undefined;
  let restarts: number[] = [];
  let closing = false;
  let retry: NodeJS.Timeout | undefined;
  let started = false;

  const start = (): Promise<Client> => {
    state = "starting";
    const process = new BoundedStdioTransport({
      command: options.command,
      args: options.args,
      env: options.env,
      ...(options.cwd !== undefined ? { cwd: options.cwd } : {}),
      maxLineBytes: options.maxResultBytes,
      onStderr: (chunk) => stderr.splitter.push(chunk),
    });
    transport = process;
    const client = new Client(CLIENT_INFO, { capabilities: {} });
    client.onerror = () => {};
    client.setNotificationHandler(ToolListChangedNotificationSchema, () => options.onListChanged());
    const opening = client.connect(process, { timeout: options.timeoutMs }).then(() => {
      state = "up";
      lastError = undefined;
      log.info({ event: "mcp.stdio_started", server, pid: process.pid });
      if (started) options.onListChanged();
      started = true;
      return client;
    });
    client.onclose = () => died(opening, process);
    current = opening;
    opening.catch((error: unknown) => {
      lastError = error instanceof Error ? error.message.slice(0, 200) : "start failed";
      void process.close();
    });
    return opening;
  };

  const died = (which: Promise<Client>, process: BoundedStdioTransport) => {
    if (current !== which || closing) return;
    current = undefined;
    stderr.flush();
    log.warn({ event: "mcp.stdio_exited", server, pid: process.pid });
    lastError = "the process exited";
    const at = now();
    restarts = restarts.filter((t) => at - t < options.restartWindowMs);
    if (restarts.length >= options.maxRestarts) {
      state = "down";
      const oldest = restarts[0] ?? at;
      log.error({ event: "mcp.stdio_down", server, restarts: restarts.length, setting: "maxRestarts", retryInMs: oldest + options.restartWindowMs - at });
      retry = setTimeout(() => restart(), clampDelay(oldest + options.restartWindowMs - at));
      retry.unref();
      return;
    }
    restart();
  };
  const restart = () => {
    if (closing) return;
    restarts.push(now());
    start().catch(() => {});
  };

  start().catch(() => {});

  return {
    transport: "stdio",
    async run(call, request) {
      const client = current ?? (state === "down" ? undefined : start());
      if (!client) throw new Error(`the process is down after ${options.maxRestarts} restarts within restartWindowMs`);
      return request(await whileNotAborted(client, call.signal));
    },
    state: () => state,
    get lastError() {
      return lastError;
    },
    get restarts() {
      return restarts.filter((t) => now() - t < options.restartWindowMs).length;
    },
    get pid() {
      return transport?.pid;
    },
    get stderrDropped() {
      return stderr.dropped;
    },
    async close() {
      closing = true;
      clearTimeout(retry);
      stderr.flush();
      await transport?.close();
    },
  };
}
