import { type ChildProcess, execFile, spawn } from "node:child_process";
import { once } from "node:events";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { adopt } from "./processes.js";
import { freePort } from "./redis.js";

const run = promisify(execFile);

/** A Redis Cluster of a test's own: 3 masters and a replica each, on free loopback ports, with its files in a temp dir. */
export interface OwnCluster {
  readonly ports: readonly number[];
  /** `redis://127.0.0.1:<port>` of every node. */
  readonly urls: readonly string[];
  /** Runs redis-cli against one node; its output. */
  cli(port: number, ...args: string[]): Promise<string>;
  /** The masters' and replicas' ports as the cluster sees them now. */
  roles(): Promise<{ readonly masters: number[]; readonly replicas: Array<{ readonly port: number; readonly masterPort: number }> }>;
  /** The port of the master serving `slot`. */
  masterOfSlot(slot: number): Promise<number>;
  /** Waits until every node reports `cluster_state:ok` and the masters are `expected` (when given). */
  settled(timeoutMs?: number): Promise<void>;
  /** Kills one node (SIGKILL by its PID) and waits for its exit: a master that dies, not one that hands over. */
  kill(port: number): Promise<void>;
  /** Stops every node it started (SIGKILL by PID) and removes its files. */
  stop(): Promise<void>;
}

/** Extra redis-server arguments per node (TLS, ACL files), and how redis-cli reaches the nodes. */
export interface ClusterOptions {
  readonly serverArgs?: (port: number) => readonly string[];
  readonly cliArgs?: readonly string[];
}

/** Bounded polling: `check` until true, or an error naming `what` after `timeoutMs`. */
export async function until(check: () => Promise<boolean>, what: string, timeoutMs = 60_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    try {
      if (await check()) return;
    } catch {
      // not yet
    }
    if (Date.now() > deadline) throw new Error(`${what}: not within ${timeoutMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

async function launchNode(dir: string, port: number, extra: readonly string[]): Promise<ChildProcess> {
  // The bus port defaults to port + 10000, which may be taken or past 65535: a free one of its own.
  const busPort = await freePort();
  const args = [
    "--port",
    String(port),
    "--cluster-port",
    String(busPort),
    "--bind",
    "127.0.0.1",
    "--cluster-enabled",
    "yes",
    "--cluster-config-file",
    `nodes-${port}.conf`,
    "--cluster-node-timeout",
    "2000",
    "--dir",
    dir,
    "--save",
    "",
    "--appendonly",
    "no",
    ...extra,
  ];
  const child = adopt(spawn("redis-server", args, { stdio: ["ignore", "pipe", "pipe"], cwd: dir }));
  let out = "";
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`cluster node ${port} did not start within 60 s: ${out}`)), 60_000);
    child.stdout!.on("data", (d: Buffer) => {
      out += d.toString();
      if (out.includes("Ready to accept connections")) {
        clearTimeout(timer);
        resolve();
      }
    });
    child.once("exit", (code) => {
      clearTimeout(timer);
      reject(new Error(`cluster node ${port} exited with ${code}: ${out}`));
    });
  });
  return child;
}

/** Starts six nodes and joins them (`redis-cli --cluster create … --cluster-replicas 1`), then waits for `cluster_state:ok` everywhere. */
export async function startOwnCluster(options: ClusterOptions = {}): Promise<OwnCluster> {
  const dir = await mkdtemp(join(tmpdir(), "sluice-cluster-"));
  const ports: number[] = [];
  for (let i = 0; i < 6; i++) ports.push(await freePort());
  const children: ChildProcess[] = [];
  const cliArgs = options.cliArgs ?? [];
  const cli = async (port: number, ...args: string[]) => (await run("redis-cli", ["-h", "127.0.0.1", "-p", String(port), ...cliArgs, ...args], { timeout: 30_000 })).stdout;
  const stop = async () => {
    await Promise.all(
      children.map(async (child) => {
        if (child.exitCode !== null || child.signalCode !== null) return;
        const exited = once(child, "exit");
        process.kill(child.pid!, "SIGKILL");
        await exited;
      }),
    );
    await rm(dir, { recursive: true, force: true });
  };
  try {
    for (const port of ports) children.push(await launchNode(dir, port, options.serverArgs?.(port) ?? []));
    await run("redis-cli", [...cliArgs, "--cluster", "create", ...ports.map((p) => `127.0.0.1:${p}`), "--cluster-replicas", "1", "--cluster-yes"], { timeout: 60_000 });
  } catch (error) {
    await stop();
    throw error;
  }
  const nodes = async () =>
    (await cli(ports[0]!, "CLUSTER", "NODES"))
      .trim()
      .split("\n")
      .map((line) => line.split(" "));
  const portOf = (address: string) => Number(/:(\d+)@/.exec(address)![1]);
  const cluster: OwnCluster = {
    ports,
    urls: ports.map((p) => `redis://127.0.0.1:${p}`),
    cli,
    async roles() {
      const all = await nodes();
      const idToPort = new Map(all.map((n) => [n[0]!, portOf(n[1]!)]));
      const alive = all.filter((n) => !n[2]!.includes("fail"));
      return {
        masters: alive.filter((n) => n[2]!.includes("master")).map((n) => portOf(n[1]!)),
        replicas: alive.filter((n) => n[2]!.includes("slave")).map((n) => ({ port: portOf(n[1]!), masterPort: idToPort.get(n[3]!)! })),
      };
    },
    async masterOfSlot(slot) {
      for (const n of await nodes()) {
        if (!n[2]!.includes("master") || n[2]!.includes("fail")) continue;
        for (const range of n.slice(8)) {
          const [from, to] = range.split("-").map(Number);
          if (slot >= from! && slot <= (to ?? from)!) return portOf(n[1]!);
        }
      }
      throw new Error(`no master serves slot ${slot}`);
    },
    async settled(timeoutMs = 60_000) {
      const live = () => ports.filter((_, i) => children[i]!.exitCode === null && children[i]!.signalCode === null);
      await until(async () => (await Promise.all(live().map((p) => cli(p, "CLUSTER", "INFO")))).every((info) => info.includes("cluster_state:ok")), "cluster_state:ok on every node", timeoutMs);
    },
    async kill(port) {
      const child = children[ports.indexOf(port)]!;
      if (child.exitCode !== null || child.signalCode !== null) return;
      const exited = once(child, "exit");
      process.kill(child.pid!, "SIGKILL");
      await exited;
    },
    stop,
  };
  try {
    await cluster.settled();
    // Every replica has synced with its master (a failover asked before that is refused).
    await until(async () => (await Promise.all(ports.map((p) => cli(p, "INFO", "replication")))).filter((i) => i.includes("master_link_status:up")).length === 3, "replicas in sync");
  } catch (error) {
    await stop();
    throw error;
  }
  return cluster;
}
