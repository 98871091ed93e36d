import { type ChildProcess, spawn } from "node:child_process";
import { once } from "node:events";
import { availableParallelism } from "node:os";
import { adopt } from "./processes.js";

/** Busy-loop processes, one per core: a machine that is busy for reasons of its own. */
export interface CpuLoad {
  readonly pids: readonly number[];
  stop(): Promise<void>;
}

/** Starts `count` processes (default: one per core) that spin until stopped; each is ended by its PID. */
export async function startCpuLoad(count = availableParallelism()): Promise<CpuLoad> {
  const children: ChildProcess[] = [];
  for (let i = 0; i < count; i++) {
    const child = adopt(spawn(process.execPath, ["-e", "process.stdout.write('spinning\\n'); for (;;) {}"], { stdio: ["ignore", "pipe", "ignore"] }));
    children.push(child);
    await once(child.stdout!, "data");
  }
  return {
    pids: children.map((c) => c.pid!),
    async stop() {
      await Promise.all(
        children.map(async (child) => {
          if (child.exitCode !== null || child.signalCode !== null) return;
          const exited = once(child, "exit");
          child.kill("SIGKILL");
          await exited;
        }),
      );
    },
  };
}
