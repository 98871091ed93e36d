import { type ChildProcess, spawn } from "node:child_process";
import { once } from "node:events";
import { appendFileSync, readFileSync } from "node:fs";
import { createInterface } from "node:readline";

const CLOCK_TICKS = 100; // USER_HZ on Linux

/** A process started by the benchmark, with its CPU and memory readable from /proc. */
export interface Proc {
  readonly child: ChildProcess;
  readonly pid: number;
  cpuSeconds(): number;
  rssBytes(): number;
  stop(): Promise<void>;
}

export function procOf(child: ChildProcess): Proc {
  const pid = child.pid!;
  return {
    child,
    pid,
    cpuSeconds() {
      const fields = readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1]!.split(" ");
      return (Number(fields[11]) + Number(fields[12])) / CLOCK_TICKS;
    },
    rssBytes() {
      return Number(/VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, "utf8"))![1]) * 1024;
    },
    async stop() {
      if (child.exitCode !== null || child.signalCode !== null) return;
      const exited = once(child, "exit");
      child.kill("SIGTERM");
      const timer = setTimeout(() => child.kill("SIGKILL"), 5_000);
      await exited;
      clearTimeout(timer);
    },
  };
}

/**
 * Starts a process and resolves when a stdout or stderr line satisfies
 * `ready`, with what `ready` extracted from it. Output after that is
 * consumed and dropped, so the child never blocks on a full pipe; with
 * BENCH_PROC_LOG=PATH it is appended to PATH.<pid> instead (a gateway's
 * `--trace-gc` lines, say, with BENCH_GATEWAY_NODE_FLAGS).
 */
export function startUntil<T>(command: string, args: readonly string[], ready: (line: string) => T | undefined, options: { env?: NodeJS.ProcessEnv; cwd?: string; timeoutMs?: number } = {}): Promise<{ proc: Proc; value: T }> {
  const child = spawn(command, args, { env: options.env ?? process.env, cwd: options.cwd, stdio: ["ignore", "pipe", "pipe"] });
  let output = "";
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      child.kill("SIGKILL");
      reject(new Error(`${args.join(" ")} not ready within ${options.timeoutMs ?? 30_000} ms:\n${output.slice(-2000)}`));
    }, options.timeoutMs ?? 30_000);
    child.once("exit", (code) => {
      clearTimeout(timer);
      reject(new Error(`${args.join(" ")} exited with ${code}:\n${output.slice(-2000)}`));
    });
    let done = false;
    for (const stream of [child.stdout!, child.stderr!]) {
      createInterface({ input: stream }).on("line", (line) => {
        if (done && process.env.BENCH_PROC_LOG) appendFileSync(`${process.env.BENCH_PROC_LOG}.${child.pid}`, `${line}\n`);
        if (done) return;
        output += `${line}\n`;
        const value = ready(line);
        if (value === undefined) return;
        done = true;
        clearTimeout(timer);
        child.removeAllListeners("exit");
        resolve({ proc: procOf(child), value });
      });
    }
  });
}

/** Runs a load-generator process to completion and returns the JSON it prints last. */
export async function runJson<T>(args: readonly string[], timeoutMs: number): Promise<T> {
  const child = spawn(process.execPath, args, { stdio: ["ignore", "pipe", "inherit"] });
  let out = "";
  child.stdout!.setEncoding("utf8");
  child.stdout!.on("data", (d: string) => (out += d));
  const timer = setTimeout(() => child.kill("SIGKILL"), timeoutMs);
  // `close`, not `exit`: at `exit` the child's stdout may still hold unread output, and a large result arrived cut short.
  const [code] = (await once(child, "close")) as [number | null];
  clearTimeout(timer);
  if (code !== 0) throw new Error(`load generator ${args.slice(-1)[0]?.slice(0, 80)} exited with ${code}`);
  const last = out.trim().split("\n").at(-1)!;
  return JSON.parse(last) as T;
}

/**
 * A load-generator process started, not awaited: `child` to signal it
 * (SIGUSR2 ends an `untilSignal` run), `warm` once it printed `{"warm":true}`
 * (its warm-up done), `result` the JSON it prints last.
 */
export function startJson<T>(args: readonly string[], timeoutMs: number): { readonly child: ChildProcess; readonly warm: Promise<void>; readonly result: Promise<T> } {
  const child = spawn(process.execPath, args, { stdio: ["ignore", "pipe", "inherit"] });
  let out = "";
  let warmed: () => void = () => undefined;
  const warm = new Promise<void>((resolve) => (warmed = resolve));
  child.stdout!.setEncoding("utf8");
  child.stdout!.on("data", (d: string) => {
    out += d;
    if (out.includes('{"warm":true}')) warmed();
  });
  const timer = setTimeout(() => child.kill("SIGKILL"), timeoutMs);
  // `close`, not `exit`: at `exit` the child's stdout may still hold unread output (the head-of-line run's 400 KB result was cut).
  const result = once(child, "close").then(([code]) => {
    clearTimeout(timer);
    if (code !== 0) throw new Error(`load generator ${args.slice(-1)[0]?.slice(0, 80)} exited with ${String(code)}`);
    return JSON.parse(out.trim().split("\n").at(-1)!) as T;
  });
  return { child, warm, result };
}
