import type { Logger } from "../logging/logger.js";
import type { Config, ConfigLoad } from "./config.js";
import { diffConfig } from "./config-diff.js";
import { restartOnlyChanges } from "./restart-only.js";

/** Where a reload reads the configuration again: the file given at start-up. */
export interface ConfigSource {
  /** For log lines: the file's path. */
  readonly name: string;
  /** The same loader and problem collector start-up used. */
  load(): Promise<ConfigLoad>;
}

/** Called with the new configuration after it became current; should not throw (a throw is logged). */
export type ConfigListener = (next: Config, previous: Config) => void;

/** Reload attempts since start, for operators (/debug/runtime) and, later, metrics. */
export interface ReloadCounts {
  readonly ok: number;
  readonly failed: number;
}

export type ReloadOutcome = "reloaded" | "failed" | "skipped";

/**
 * The one owner of the running configuration. Every request reads
 * `current()` once, when it starts, and keeps what it got for its whole
 * life, so a reload never changes a stream in flight. A reload swaps in a
 * new immutable Config whole (whatever sections it has: new ones come along
 * without changes here), or keeps the current one when the new file has any
 * problem.
 */
export interface LiveConfig {
  current(): Config;
  /**
   * Reads the source again through the start-up loader. A good file becomes
   * current, listeners are told, and `config.reloaded` is logged (after a
   * `config.restart_required` warning naming every setting that differs from
   * the start-up configuration and only a restart applies); a bad one is logged as `config.reload_failed` with every
   * problem and changes nothing. Never rejects. Reloads run one at a time, in
   * the order asked. `trigger` names who asked (SIGHUP, watch) in the logs.
   */
  reload(trigger: string): Promise<ReloadOutcome>;
  onChange(listener: ConfigListener): void;
  counts(): ReloadCounts;
}

export interface LiveConfigOptions {
  readonly initial: Config;
  /** Absent when there is nothing to read again (the built-in default): a reload is then skipped, and says so. */
  readonly source?: ConfigSource;
  readonly logger: Logger;
  /** Told every reload's outcome (the reload counter metric). */
  readonly onOutcome?: (outcome: ReloadOutcome) => void;
}

export function createLiveConfig(options: LiveConfigOptions): LiveConfig {
  const { source, logger } = options;
  const listeners: ConfigListener[] = [];
  let config = options.initial;
  let ok = 0;
  let failed = 0;
  let queue: Promise<unknown> = Promise.resolve();
  const counts = (): ReloadCounts => ({ ok, failed });

  async function load(from: ConfigSource): Promise<ConfigLoad> {
    try {
      return await from.load();
    } catch (error) {
      // The loader reports problems as data; a throw is a bug, and still must not take the gateway down.
      const message = error instanceof Error ? `${error.name}: ${error.message}` : String(error);
      return { ok: false, problems: [message], report: message };
    }
  }

  async function attempt(trigger: string): Promise<ReloadOutcome> {
    if (!source) {
      logger.warn({ event: "config.reload_skipped", trigger, reason: "running on the built-in default configuration: no file to read again (start with --config FILE)" });
      return "skipped";
    }
    const loaded = await load(source);
    if (!loaded.ok) {
      failed++;
      logger.error({ event: "config.reload_failed", trigger, source: source.name, problems: loaded.problems, kept: "the running configuration", reloads: counts() });
      return "failed";
    }
    const previous = config;
    const next = loaded.config;
    // Against what the listener runs, not the last reload: a pending change is named on every reload until a restart.
    const restart = restartOnlyChanges(options.initial, next);
    config = next;
    ok++;
    for (const listener of listeners) {
      try {
        listener(next, previous);
      } catch (error) {
        // A listener is ours and should not throw; if one does, the others still follow the new configuration.
        logger.error({ event: "config.listener_failed", trigger, err: error });
      }
    }
    if (restart.length > 0) {
      logger.warn({ event: "config.restart_required", trigger, source: source.name, fields: restart, message: "changed in the file but kept as at start; applies at the next start" });
    }
    logger.info({ event: "config.reloaded", trigger, source: source.name, ...diffConfig(previous, next), reloads: counts() });
    return "reloaded";
  }

  return {
    current: () => config,
    reload(trigger) {
      const run = queue
        .then(() => attempt(trigger))
        .then((outcome) => {
          options.onOutcome?.(outcome);
          return outcome;
        });
      queue = run.catch(() => undefined);
      return run;
    },
    onChange(listener) {
      listeners.push(listener);
    },
    counts,
  };
}
