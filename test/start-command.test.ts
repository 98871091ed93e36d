import { execFile } from "node:child_process";
import { existsSync, readFileSync, statSync } from "node:fs";
import { mkdir, mkdtemp, rm, utimes, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { promisify } from "node:util";
import { afterEach, describe, expect, it } from "vitest";
import type { StreamChatResponse } from "../gen/sluice/v1/chat_service_pb.js";
import { chatClient, transports, userRequest } from "./helpers/clients.js";
import { type Started, startCommand } from "./helpers/processes.js";

const run = promisify(execFile);
const ROOT = process.cwd();
const listening = (l: Record<string, unknown>) => l.event === "server.listening";

/** The pids of a process's children, from /proc (Linux). */
function childrenOf(pid: number): number[] {
  const text = readFileSync(`/proc/${pid}/task/${pid}/children`, "utf8").trim();
  return text ? text.split(" ").map(Number) : [];
}

function commandLine(pid: number): string[] {
  return readFileSync(`/proc/${pid}/cmdline`, "utf8").split("\0").filter(Boolean);
}

function isRunning(pid: number): boolean {
  try {
    process.kill(pid, 0);
  } catch {
    return false;
  }
  // An orphan that exited stays a zombie until whoever adopted it reaps it: it runs no more.
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    return stat.slice(stat.lastIndexOf(")") + 2, stat.lastIndexOf(")") + 3) !== "Z";
  } catch {
    return false;
  }
}

/** Every process below `pid`, depth first. */
function descendantsOf(pid: number): number[] {
  return childrenOf(pid).flatMap((child) => [child, ...descendantsOf(child)]);
}

/** Resolves when every process holding the write end of `started`'s stdout has exited (the gateway's too). */
function stdoutClosed(started: Started): Promise<void> {
  return new Promise((resolve) => started.child.stdout!.once("close", () => resolve()));
}

/** Processes this file started, ended by pid if a test fails half-way. */
const started: number[] = [];
afterEach(() => {
  for (const pid of started.splice(0)) if (isRunning(pid)) process.kill(pid, "SIGKILL");
});

/** `npm start` on the built-in default, and the gateway process npm runs. */
async function npmStart(): Promise<{ npm: Started; gatewayPid: number; url: string }> {
  const npm = await startCommand("npm", ["start", "--", "--port", "0"], listening, { cwd: ROOT });
  started.push(npm.child.pid!);
  const children = childrenOf(npm.child.pid!);
  started.push(...children);
  expect(children).toHaveLength(1);
  return { npm, gatewayPid: children[0]!, url: npm.line.url as string };
}

describe("the start command runs the gateway in the process that gets the signal", () => {
  it("npm start: the gateway is npm's direct child; SIGTERM to npm drains the stream in flight, exits 0 and leaves nothing running", async () => {
    const { npm, gatewayPid, url } = await npmStart();
    const argv = commandLine(gatewayPid);
    expect(argv.slice(1)).toEqual(["--max-semi-space-size=64", "dist/src/main.js", "--port", "0"]);
    expect(argv[0]).toMatch(/node$/);

    const received: StreamChatResponse[] = [];
    let exit: Promise<number | null> | undefined;
    for await (const message of chatClient(transports(url)["grpc (connect-node, h2)"]!).streamChat(userRequest("demo", "Hello"))) {
      received.push(message);
      exit ??= npm.stop(); // SIGTERM to npm after the first message
    }
    expect(received.at(-1)!.delta.case).toBe("finish");
    expect(await exit).toBe(0);
    expect(isRunning(gatewayPid)).toBe(false);
    await expect(fetch(`${url}/healthz`)).rejects.toThrow();
  });

  it("npm start: SIGHUP to npm, which npm does not pass on, does not orphan the gateway: it sees npm gone, drains the stream in flight and exits", async () => {
    const { npm, gatewayPid, url } = await npmStart();
    expect(npm.line.pid).toBe(gatewayPid); // the pid to send SIGHUP to, in the listening line (and the banner)
    const closed = stdoutClosed(npm);
    const received: StreamChatResponse[] = [];
    let gone: Promise<Record<string, unknown>> | undefined;
    for await (const message of chatClient(transports(url)["grpc (connect-node, h2)"]!).streamChat(userRequest("demo-slow", "Hello"))) {
      received.push(message);
      if (!gone) {
        process.kill(npm.child.pid!, "SIGHUP");
        gone = npm.waitForLine((l) => l.event === "server.launcher_gone");
      }
    }
    expect(received.at(-1)!.delta.case).toBe("finish");
    expect(await gone).toMatchObject({ launcherPid: npm.child.pid, pid: gatewayPid });
    await closed;
    // Its output closes as it exits, a moment before it is a zombie (the kernel closes its files first): wait for that moment, bounded.
    await expect.poll(() => isRunning(gatewayPid), { timeout: 30_000 }).toBe(false);
    expect(npm.lines().find((l) => l.event === "server.stopped")).toMatchObject({ drained: true });
  });

  it("SIGTERM still ends it when whoever read its logs has gone away", async () => {
    const { npm, gatewayPid } = await npmStart();
    npm.child.stdout!.destroy();
    npm.child.stderr!.destroy();
    expect(await npm.stop()).toBe(0);
    expect(isRunning(gatewayPid)).toBe(false);
  });

  it("does not rebuild an up-to-date build: npm start -- --help prints the usage and leaves dist/ as it was", async () => {
    const before = statSync("dist/src/main.js").mtimeMs;
    const { stdout, stderr } = await run("npm", ["start", "--", "--help"], { cwd: ROOT });
    expect(stdout).toContain("usage: sluice");
    expect(stderr).not.toContain("building");
    expect(statSync("dist/src/main.js").mtimeMs).toBe(before);
  });

  it("npx sluice: SIGTERM to npx (whose shell dies and passes nothing on) stops the gateway too", async () => {
    const project = await mkdtemp(join(tmpdir(), "sluice-npx-"));
    try {
      await writeFile(join(project, "package.json"), JSON.stringify({ name: "uses-sluice", version: "1.0.0", private: true }));
      await run("npm", ["install", "--offline", "--no-audit", "--no-fund", ROOT], { cwd: project });
      const npx = await startCommand("npx", ["sluice", "--port", "0"], listening, { cwd: project });
      started.push(npx.child.pid!);
      const gatewayPid = descendantsOf(npx.child.pid!).find((pid) => commandLine(pid).some((arg) => arg.endsWith("/sluice")) && /node$/.test(commandLine(pid)[0]!));
      expect(gatewayPid).toBeDefined();
      started.push(gatewayPid!);
      expect(npx.line.pid).toBe(gatewayPid);
      const closed = stdoutClosed(npx);
      await npx.stop();
      expect(await npx.waitForLine((l) => l.event === "server.launcher_gone")).toMatchObject({ pid: gatewayPid });
      await closed;
      await expect.poll(() => isRunning(gatewayPid!), { timeout: 30_000 }).toBe(false);
    } finally {
      await rm(project, { recursive: true, force: true });
    }
  });

  it("the installed sluice command starts the gateway itself and stops on SIGTERM", async () => {
    const prefix = await mkdtemp(join(tmpdir(), "sluice-prefix-"));
    try {
      await run("npm", ["install", "--global", "--offline", "--no-audit", "--no-fund", "--prefix", prefix, ROOT], { cwd: ROOT });
      const sluice = await startCommand(join(prefix, "bin", "sluice"), ["--port", "0"], listening);
      started.push(sluice.child.pid!);
      expect(childrenOf(sluice.child.pid!)).toEqual([]); // no wrapper: this pid is the gateway
      const ready = await fetch(`${sluice.line.url as string}/readyz`);
      expect(ready.status).toBe(200);
      expect(await sluice.stop()).toBe(0);
    } finally {
      await rm(prefix, { recursive: true, force: true });
    }
  });
});

describe("build-if-stale", () => {
  /** A project with one source and its output, with chosen modification times (seconds). */
  async function project(times: { source: number; output?: number; config?: number; consoleSource?: number; consolePage?: number }): Promise<string> {
    const dir = await mkdtemp(join(tmpdir(), "sluice-stale-"));
    const files: Array<[string, string, number | undefined]> = [
      ["tsconfig.json", "{}", times.config ?? 1],
      ["tsconfig.build.json", JSON.stringify({ include: ["src"] }), times.config ?? 1],
      ["src/a.ts", "export const a = 1;", times.source],
      ["dist/src/a.js", "export const a = 1;", times.output],
      ["console/src/main.tsx", "export {};", times.consoleSource],
      ["dist/console/index.html", "<!doctype html>", times.consolePage],
    ];
    for (const [path, text, time] of files) {
      if (time === undefined) continue;
      await mkdir(dirname(join(dir, path)), { recursive: true });
      await writeFile(join(dir, path), text);
      await utimes(join(dir, path), time, time);
    }
    return dir;
  }

  async function check(dir: string): Promise<{ code: number; stdout: string }> {
    return run(process.execPath, [join(ROOT, "scripts/build-if-stale.mjs"), "--check"], { cwd: dir }).then(
      ({ stdout }) => ({ code: 0, stdout }),
      (e: { code: number; stdout: string }) => e,
    );
  }

  const cases: Array<[string, { source: number; output?: number; config?: number; consoleSource?: number; consolePage?: number }, number, string]> = [
    ["every output newer than its source: fresh", { source: 100, output: 200 }, 0, ""],
    ["a source newer than its output: stale", { source: 300, output: 200 }, 1, "src/a.ts changed"],
    ["a source never built: stale", { source: 100 }, 1, "src/a.ts has not been built"],
    ["compiler settings newer than the outputs: stale", { source: 100, output: 200, config: 300 }, 1, "tsconfig.json changed"],
    ["the console built after its sources: fresh", { source: 100, output: 200, consoleSource: 100, consolePage: 200 }, 0, ""],
    ["a console source newer than the console's page: stale", { source: 100, output: 200, consoleSource: 300, consolePage: 200 }, 1, "console/src/main.tsx changed"],
    ["a console never built: stale", { source: 100, output: 200, consoleSource: 100 }, 1, "the console has not been built"],
  ];
  for (const [name, times, code, reason] of cases) {
    it(name, async () => {
      const dir = await project(times);
      try {
        const result = await check(dir);
        expect(result.code).toBe(code);
        expect(result.stdout).toContain(reason);
        expect(existsSync(join(dir, "dist/src/a.js"))).toBe(times.output !== undefined); // --check never builds
      } finally {
        await rm(dir, { recursive: true, force: true });
      }
    });
  }
});
