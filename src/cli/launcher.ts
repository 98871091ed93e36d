import { readFileSync } from "node:fs";

/** How often the launcher is looked for: a getppid-sized read, so often enough that nobody waits for it. */
const POLL_MS = 500;

/**
 * This process's parent pid as the kernel has it now. Node's
 * `process.ppid` is read once at start and never changes, so it cannot
 * tell that the parent went away; /proc/self/stat can (Linux). Undefined
 * where there is no /proc.
 */
export function currentParentPid(): number | undefined {
  try {
    const stat = readFileSync("/proc/self/stat", "utf8");
    // "pid (comm) state ppid …": comm may hold spaces and parentheses, so count from the last ")".
    const ppid = Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[1]);
    return Number.isInteger(ppid) ? ppid : undefined;
  } catch {
    return undefined;
  }
}

/** Whether `pid` is still this process's parent: by /proc where there is one, else by whether it still exists. */
function stillParent(pid: number): boolean {
  const now = currentParentPid();
  if (now !== undefined) return now === pid;
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === "EPERM";
  }
}

/**
 * The npm process that launched the gateway (`npm start`, `npx sluice`),
 * or undefined when no npm script did. npm sets `npm_lifecycle_event` for
 * the commands it runs.
 */
export function npmLauncher(env: NodeJS.ProcessEnv, ppid: number): number | undefined {
  return env.npm_lifecycle_event !== undefined && ppid > 1 ? ppid : undefined;
}

/**
 * Calls `onGone` once when the process that launched the gateway is gone.
 * npm forwards only SIGINT and SIGTERM to what it runs: a SIGHUP to
 * `npm start` ends npm and used to leave the gateway running on, orphaned,
 * with its old configuration and nobody holding its pid; `npx sluice` runs
 * the gateway under a shell that dies on SIGTERM and leaves it the same way.
 * Watched only under npm: a gateway started by a shell with `nohup … &` is
 * meant to outlive that shell.
 */
export function watchLauncher(launcherPid: number, onGone: () => void, pollMs = POLL_MS): { close(): void } {
  const timer = setInterval(() => {
    if (stillParent(launcherPid)) return;
    clearInterval(timer);
    onGone();
  }, pollMs);
  timer.unref();
  return { close: () => clearInterval(timer) };
}
