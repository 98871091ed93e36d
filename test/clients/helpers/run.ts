import { spawn } from "node:child_process";
import { mkdir, mkdtemp, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";

/** How long a client process may run: a bound on a hang, not a speed target (the suite's per-test timeout is 120 s). */
export const CLIENT_RUN_MS = 90_000;

export interface Scratch {
  /** HOME, with XDG_* beneath it: the client reads no configuration of the developer's. */
  readonly home: string;
  /** The working directory the client runs in (its workspace). */
  readonly work: string;
  /** The environment every client gets: no variable of this process's but PATH and locale. */
  readonly env: NodeJS.ProcessEnv;
}

export async function scratch(): Promise<Scratch> {
  const root = await mkdtemp(join(tmpdir(), "sluice-client-"));
  const home = join(root, "home");
  const work = join(root, "work");
  // TMPDIR beside HOME, not above it: Codex creates no helper binaries (its apply_patch alias) under a temporary directory.
  const tmp = join(root, "tmp");
  for (const dir of [home, work, tmp, join(home, ".config"), join(home, ".local", "share"), join(home, ".cache"), join(home, ".local", "state")]) await mkdir(dir, { recursive: true });
  return {
    home,
    work,
    env: {
      PATH: process.env.PATH,
      LANG: "C.UTF-8",
      HOME: home,
      USERPROFILE: home,
      XDG_CONFIG_HOME: join(home, ".config"),
      XDG_DATA_HOME: join(home, ".local", "share"),
      XDG_CACHE_HOME: join(home, ".cache"),
      XDG_STATE_HOME: join(home, ".local", "state"),
      TMPDIR: tmp,
      NO_COLOR: "1",
      CI: "1",
    },
  };
}

export async function writeFileIn(dir: string, name: string, text: string): Promise<string> {
  const file = join(dir, name);
  await writeFile(file, text);
  return file;
}

export interface Ran {
  readonly code: number | null;
  readonly signal: NodeJS.Signals | null;
  readonly stdout: string;
  readonly stderr: string;
  /** The process did not end by itself within the bound and was killed. */
  readonly hung: boolean;
  readonly ms: number;
}

/**
 * Runs a client to its end, in its own process group, killed by PID (the
 * group: CLIs start shells) if it has not ended within `timeoutMs`.
 */
export function runClient(command: string, args: readonly string[], options: { env: NodeJS.ProcessEnv; cwd: string; timeoutMs?: number }): Promise<Ran> {
  const started = performance.now();
  const child = spawn(command, args, { env: options.env, cwd: options.cwd, stdio: ["ignore", "pipe", "pipe"], detached: true });
  let stdout = "";
  let stderr = "";
  child.stdout.on("data", (d: Buffer) => (stdout += d.toString()));
  child.stderr.on("data", (d: Buffer) => (stderr += d.toString()));
  let hung = false;
  const killGroup = () => {
    try {
      process.kill(-child.pid!, "SIGKILL");
    } catch {
      // Already gone.
    }
  };
  const timer = setTimeout(() => {
    hung = true;
    killGroup();
  }, options.timeoutMs ?? CLIENT_RUN_MS);
  return new Promise((resolve, reject) => {
    child.once("error", (error) => {
      clearTimeout(timer);
      reject(error);
    });
    child.once("close", (code, signal) => {
      clearTimeout(timer);
      // Whatever the client left running in its group (a shell it started) goes with it.
      killGroup();
      resolve({ code, signal, stdout, stderr, hung, ms: Math.round(performance.now() - started) });
    });
  });
}

/** What a failed assertion shows of a client's run. */
export function evidence(ran: Ran): string {
  // Claude Code's first line lists its tools, commands and plugins (~4 KB): what it says of itself, not of the run.
  const stdout = ran.stdout
    .split("\n")
    .filter((line) => !line.startsWith('{"type":"system","subtype":"init"'))
    .join("\n");
  return `exit ${ran.code}${ran.signal ? ` (${ran.signal})` : ""}${ran.hung ? ", killed after the bound" : ""} in ${ran.ms} ms\nstdout (tail):\n${stdout.slice(-6_000)}\nstderr (tail):\n${ran.stderr.slice(-4_000)}`;
}

/** Every JSON line in `text` (JSONL output of the CLIs), skipping lines that are not JSON. */
export function jsonLines(text: string): Array<Record<string, unknown>> {
  const out: Array<Record<string, unknown>> = [];
  for (const line of text.split("\n")) {
    const t = line.trim();
    if (!t.startsWith("{")) continue;
    try {
      out.push(JSON.parse(t) as Record<string, unknown>);
    } catch {
      // A line that is not JSON (a progress message).
    }
  }
  return out;
}
