import { type ChildProcess, spawn } from "node:child_process";
import { createInterface } from "node:readline";

export interface Started {
  readonly child: ChildProcess;
  /** The first stdout JSON line that matched. */
  readonly line: Record<string, unknown>;
  /** Everything the process wrote to stderr so far. */
  stderr(): string;
  /** Every JSON line the process wrote to stdout so far. */
  lines(): ReadonlyArray<Record<string, unknown>>;
  /** Resolves with the first stdout JSON line matching `predicate` (now or later); rejects after `timeoutMs`. */
  waitForLine(predicate: (line: Record<string, unknown>) => boolean, timeoutMs?: number): Promise<Record<string, unknown>>;
  /** Sends SIGTERM and resolves with the exit code. */
  stop(): Promise<number | null>;
}

/**
 * Starts a Node process and waits for a JSON log line on stdout that
 * satisfies `ready` (an event, not a sleep). Fails if it exits first.
 */
export function startProcess(
  args: readonly string[],
  ready: (line: Record<string, unknown>) => boolean,
  env: NodeJS.ProcessEnv = process.env,
  timeoutMs = 15_000,
): Promise<Started> {
  return startCommand(process.execPath, args, ready, { env, timeoutMs });
}

/** Like startProcess, for any command (npm, an installed bin). */
export function startCommand(
  command: string,
  args: readonly string[],
  ready: (line: Record<string, unknown>) => boolean,
  options: { env?: NodeJS.ProcessEnv; timeoutMs?: number; cwd?: string } = {},
): Promise<Started> {
  const { env = process.env, timeoutMs = 15_000, cwd } = options;
  const child = spawn(command, args, { env, cwd, stdio: ["ignore", "pipe", "pipe"] });
  let stderr = "";
  child.stderr!.on("data", (d: Buffer) => (stderr += d.toString()));
  const exited = new Promise<number | null>((resolve) => child.once("exit", (code) => resolve(code)));
  const lines: Array<Record<string, unknown>> = [];
  const watchers = new Set<(line: Record<string, unknown>) => void>();
  const waitForLine = (predicate: (line: Record<string, unknown>) => boolean, waitMs = 15_000) => {
    const found = lines.find(predicate);
    if (found) return Promise.resolve(found);
    return new Promise<Record<string, unknown>>((resolve, reject) => {
      const watch = (line: Record<string, unknown>) => {
        if (!predicate(line)) return;
        clearTimeout(timer);
        watchers.delete(watch);
        resolve(line);
      };
      const timer = setTimeout(() => {
        watchers.delete(watch);
        reject(new Error(`no matching log line within ${waitMs} ms`));
      }, waitMs);
      watchers.add(watch);
    });
  };
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      child.kill("SIGKILL");
      reject(new Error(`process did not become ready within ${timeoutMs} ms: ${stderr}`));
    }, timeoutMs);
    void exited.then((code) => {
      clearTimeout(timer);
      reject(new Error(`process exited with ${code} before it was ready: ${stderr}`));
    });
    createInterface({ input: child.stdout! }).on("line", (text) => {
      let line: Record<string, unknown>;
      try {
        line = JSON.parse(text) as Record<string, unknown>;
      } catch {
        return;
      }
      lines.push(line);
      for (const watch of [...watchers]) watch(line);
      if (!ready(line)) return;
      clearTimeout(timer);
      resolve({
        child,
        line,
        stderr: () => stderr,
        lines: () => lines,
        waitForLine,
        stop: () => {
          child.kill("SIGTERM");
          return exited;
        },
      });
    });
  });
}
