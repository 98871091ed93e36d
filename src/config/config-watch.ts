import { type FSWatcher, readFileSync, watch } from "node:fs";
import { dirname, resolve } from "node:path";
import type { Logger } from "../logging/logger.js";
import type { LiveConfig } from "./live-config.js";

/**
 * Quiet time after the last event in the directory before the file is
 * read: editors and ConfigMap updates write in several steps, and one
 * change should be one reload, not one per step.
 */
const DEBOUNCE_MS = 200;

export interface ConfigWatch {
  close(): void;
}

/** The file's text, or undefined while it cannot be read (mid-rename, removed). */
function textOf(path: string): string | undefined {
  try {
    return readFileSync(path, "utf8");
  } catch {
    return undefined;
  }
}

/**
 * Calls `changed` when the file's content changes. The directory is
 * watched, not the file: editors that save by writing a new file and
 * renaming it over the old one, and Kubernetes ConfigMap volumes (which
 * swap a symlinked directory), replace the file, and a watch on the
 * replaced file never fires again. Events that leave the file's text as it
 * was (an editor's swap file, a touch) call nothing. Never keeps the
 * process alive.
 */
function watchFile(path: string, changed: () => void, failed: (error: Error) => void): ConfigWatch {
  const file = resolve(path);
  let seen = textOf(file);
  let timer: NodeJS.Timeout | undefined;
  const check = () => {
    const text = textOf(file);
    if (text === undefined || text === seen) return;
    seen = text;
    changed();
  };
  const watcher: FSWatcher = watch(dirname(file), { persistent: false }, () => {
    clearTimeout(timer);
    timer = setTimeout(check, DEBOUNCE_MS);
    timer.unref();
  });
  watcher.on("error", (error) => {
    clearTimeout(timer);
    watcher.close();
    failed(error);
  });
  return {
    close() {
      clearTimeout(timer);
      watcher.close();
    },
  };
}

/**
 * Follows `server.watchConfig`: watches `path` while the current
 * configuration asks for it (a reload can turn it on or off) and reloads on
 * every change, as SIGHUP does. A watch that cannot start (no inotify
 * watches left, a directory that went away) is logged; SIGHUP still works.
 */
export function followConfigFile(live: LiveConfig, path: string, logger: Logger): ConfigWatch {
  let current: ConfigWatch | undefined;
  let closed = false;
  const stop = () => {
    current?.close();
    current = undefined;
  };
  const apply = (wanted: boolean) => {
    if (closed) return;
    if (!wanted) {
      if (current) logger.info({ event: "config.watch_stopped", source: path });
      return stop();
    }
    if (current) return;
    try {
      current = watchFile(
        path,
        () => void live.reload("watch"),
        (error) => {
          current = undefined;
          logger.warn({ event: "config.watch_failed", source: path, err: error });
        },
      );
      logger.info({ event: "config.watching", source: path });
    } catch (error) {
      logger.warn({ event: "config.watch_failed", source: path, err: error });
    }
  };
  apply(live.current().server.watchConfig);
  live.onChange((next) => apply(next.server.watchConfig));
  return {
    close() {
      closed = true;
      stop();
    },
  };
}
