import { type ChildProcess, spawn } from "node:child_process";
import { once } from "node:events";
import { createInterface } from "node:readline";

/**
 * How long a process may take to print its readiness line. Generous: three
 * gateways starting at once on a loaded 2-core machine took more than 15 s.
 * It bounds a failure, it is not a speed target.
 */
export const READY_TIMEOUT_MS = 90_000;

/** Every child process this test file started that has not exited yet. */
const running = new Set<ChildProcess>();

/**
 * Registers a child so that it is stopped when the test file ends, however
 * it ends: a beforeAll that started two replicas and failed on the third
 * left the two running after the suite. test/helpers/stop-children.ts (a
 * vitest setup file) calls stopChildren after each file; a worker that exits
 * kills what is left.
 */
export function adopt<T extends ChildProcess>(child: T): T {
  if (child.exitCode !== null || child.signalCode !== null) return child;
  running.add(child);
  child.once("exit", () => running.delete(child));
  return child;
}

/**
 * Stops every registered child still running: SIGTERM (and SIGCONT, for one
 * a test froze), then SIGKILL for whichever has not exited after `graceMs`.
 * Returns the command lines of those nobody had signalled (a child a test
 * had signalled and not waited for is waited for, not named).
 */
export async function stopChildren(graceMs = 10_000): Promise<string[]> {
  const left = [...running];
  const forgotten = left.filter((child) => !child.killed);
  await Promise.all(
    left.map(async (child) => {
      const exited = once(child, "exit");
      child.kill("SIGTERM");
      child.kill("SIGCONT");
      const timer = setTimeout(() => child.kill("SIGKILL"), graceMs);
      await exited;
      clearTimeout(timer);
    }),
  );
  return forgotten.map((child) => child.spawnargs.join(" "));
}

process.once("exit", () => {
  for (const child of running) child.kill("SIGKILL");
});

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
  /** Sends SIGTERM and resolves with the exit code; SIGKILL (exit code null) if it has not exited after `graceMs`. */
  stop(graceMs?: number): Promise<number | null>;
}

/**
 * Starts a Node process and waits for a JSON log line on stdout that
 * satisfies `ready` (an event, not a sleep). Fails if it exits first.
 */
export function startProcess(args: readonly string[], ready: (line: Record<string, unknown>) => boolean, env: NodeJS.ProcessEnv = process.env, timeoutMs = READY_TIMEOUT_MS): Promise<Started> {
  return startCommand(process.execPath, args, ready, { env, timeoutMs });
}

/** Like startProcess, for any command (npm, an installed bin). */
export function startCommand(command: string, args: readonly string[], ready: (line: Record<string, unknown>) => boolean, options: { env?: NodeJS.ProcessEnv; timeoutMs?: number; cwd?: string } = {}): Promise<Started> {
  const { env = process.env, timeoutMs = READY_TIMEOUT_MS, cwd } = options;
  const child = adopt(spawn(command, args, { env, cwd, stdio: ["ignore", "pipe", "pipe"] }));
  let stderr = "";
  child.stderr!.on("data", (d: Buffer) => (stderr += d.toString()));
  const exited = new Promise<number | null>((resolve) => child.once("exit", (code) => resolve(code)));
  const lines: Array<Record<string, unknown>> = [];
  const watchers = new Set<(line: Record<string, unknown>) => void>();
  /** What a failure message shows of the process: its command, its last log lines, its stderr. */
  const evidence = () => [`command: ${[command, ...args].join(" ")}`, "last stdout lines:", ...lines.slice(-10).map((l) => `  ${JSON.stringify(l)}`), `stderr: ${stderr.slice(-4_000) || "(empty)"}`].join("\n");
  const waitForLine = (predicate: (line: Record<string, unknown>) => boolean, waitMs = 60_000) => {
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
        reject(new Error(`no matching log line within ${waitMs} ms\n${evidence()}`));
      }, waitMs);
      watchers.add(watch);
    });
  };
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      child.kill("SIGKILL");
      reject(new Error(`process did not become ready within ${timeoutMs} ms\n${evidence()}`));
    }, timeoutMs);
    void exited.then((code) => {
      clearTimeout(timer);
      reject(new Error(`process exited with ${code} before it was ready\n${evidence()}`));
    });
    child.once("error", (error) => {
      clearTimeout(timer);
      reject(error);
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
        stop: async (graceMs = 60_000) => {
          child.kill("SIGTERM");
          const timer = setTimeout(() => child.kill("SIGKILL"), graceMs);
          try {
            return await exited;
          } finally {
            clearTimeout(timer);
          }
        },
      });
    });
  });
}
