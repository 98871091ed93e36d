import { type ChildProcess, spawn } from "node:child_process";
import { randomUUID } from "node:crypto";
import { once } from "node:events";
import { createConnection, createServer, type Socket } from "node:net";
import { createClient } from "redis";
import { createStoreClient, parseRecord, type SluiceRedisClient } from "../../src/store/redis-tenant-store.js";
import type { UsageRecord } from "../../src/usage/usage-record.js";
import { adopt } from "./processes.js";

/** The machine's shared Redis (README: `.ci/run` starts one when `redis-cli ping` fails). */
export const SHARED_REDIS_URL = process.env.SLUICE_TEST_REDIS_URL ?? "redis://127.0.0.1:6379";

/** A key prefix no other test (or test run) uses. */
export function testPrefix(name: string): string {
  return `sluice-test:${name}:${randomUUID().slice(0, 8)}:`;
}

/** A connected store client for tests. */
export async function storeClient(url = SHARED_REDIS_URL, timeoutMs = 5_000): Promise<SluiceRedisClient> {
  const client = createStoreClient({ url, timeoutMs });
  client.on("error", () => undefined);
  await client.connect();
  return client;
}

/**
 * A plain client for looking at what the gateway wrote: node-redis (a
 * devDependency only), a driver other than the gateway's, so what a test
 * reads back does not go through the code under test.
 */
export async function inspector(url = SHARED_REDIS_URL) {
  const client = createClient({ url });
  client.on("error", () => undefined);
  await client.connect();
  return client;
}

/** Every key under `prefix` (SCAN, never KEYS). */
export async function keysUnder(client: Awaited<ReturnType<typeof inspector>>, prefix: string): Promise<string[]> {
  const found: string[] = [];
  for await (const batch of client.scanIterator({ MATCH: `${prefix}*`, COUNT: 1000 })) found.push(...batch);
  return found;
}

/** Removes everything a test wrote under its prefix. */
export async function dropPrefix(prefix: string, url = SHARED_REDIS_URL): Promise<void> {
  const client = await inspector(url);
  try {
    const keys = await keysUnder(client, prefix);
    for (let i = 0; i < keys.length; i += 500) await client.unlink(keys.slice(i, i + 500));
  } finally {
    client.destroy();
  }
}

/** Every value under `prefix`, as text, whatever the type: for "no plaintext key anywhere" checks. */
export async function dumpPrefix(prefix: string, url = SHARED_REDIS_URL): Promise<string> {
  const client = await inspector(url);
  try {
    const out: string[] = [];
    for (const key of await keysUnder(client, prefix)) {
      out.push(key);
      const type = await client.type(key);
      if (type === "string") out.push(String(await client.get(key)));
      else if (type === "hash") out.push(JSON.stringify(await client.hGetAll(key)));
      else if (type === "zset") out.push(JSON.stringify(await client.zRangeWithScores(key, 0, -1)));
      else if (type === "stream") out.push(JSON.stringify(await client.xRange(key, "-", "+")));
      else out.push(`(${type})`);
    }
    return out.join("\n");
  } finally {
    client.destroy();
  }
}

export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer().listen(0, "127.0.0.1", () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
    server.on("error", reject);
  });
}

/** A redis-server of a test's own, which it may stop and start; never the shared one. */
export interface OwnRedis {
  readonly url: string;
  readonly port: number;
  readonly pid: number | undefined;
  /** Kills it (SIGKILL, by its PID) and waits for the exit. */
  kill(): Promise<void>;
  /** Starts it again on the same port (empty: no persistence). */
  restart(): Promise<void>;
  /** Freezes it (SIGSTOP): connections stay open, commands are read by nobody. A really stopped Redis, not a simulated one. */
  freeze(): void;
  /** Lets it run again (SIGCONT): it reads and answers everything written meanwhile, in order. */
  thaw(): void;
}

async function launch(port: number, extra: readonly string[]): Promise<ChildProcess> {
  const child = adopt(spawn("redis-server", ["--port", String(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no", ...extra], { stdio: ["ignore", "pipe", "pipe"] }));
  let out = "";
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => {
      child.kill("SIGKILL");
      reject(new Error(`redis-server on ${port} did not start within 60 s: ${out}`));
    }, 60_000);
    child.stdout!.on("data", (d: Buffer) => {
      out += d.toString();
      if (out.includes("Ready to accept connections")) {
        clearTimeout(timer);
        resolve();
      }
    });
    child.once("exit", (code) => {
      clearTimeout(timer);
      reject(new Error(`redis-server on ${port} exited with ${code}: ${out}`));
    });
  });
  return child;
}

export async function startOwnRedis(extra: readonly string[] = []): Promise<OwnRedis> {
  const port = await freePort();
  let child = await launch(port, extra);
  return {
    url: `redis://127.0.0.1:${port}`,
    port,
    get pid() {
      return child.pid;
    },
    async kill() {
      if (child.exitCode !== null || child.signalCode !== null) return;
      const exited = once(child, "exit");
      child.kill("SIGKILL");
      await exited;
    },
    async restart() {
      child = await launch(port, extra);
    },
    freeze() {
      child.kill("SIGSTOP");
    },
    thaw() {
      child.kill("SIGCONT");
    },
  };
}

/** The usage records a gateway appended under `prefix`, oldest first. */
export async function usageRecords(prefix: string, url = SHARED_REDIS_URL): Promise<UsageRecord[]> {
  const client = await inspector(url);
  try {
    return ((await client.xRange(`${prefix}usage`, "-", "+")) ?? []).map((e) => parseRecord(e.message as Record<string, string>));
  } finally {
    client.destroy();
  }
}

/**
 * A TCP proxy in front of Redis that a test can stall: while stalled,
 * bytes in either direction are held (the connection stays up, Redis just
 * seems silent: a slow Redis, without any timing); `release` delivers them
 * in order.
 */
export interface StallingProxy {
  readonly url: string;
  stall(): void;
  release(): void;
  close(): Promise<void>;
}

export async function startStallingProxy(targetPort: number): Promise<StallingProxy> {
  let stalled = false;
  const held: Array<() => void> = [];
  const sockets = new Set<Socket>();
  const server = createServer((client) => {
    const target = createConnection(targetPort, "127.0.0.1");
    for (const s of [client, target]) {
      sockets.add(s);
      s.on("error", () => undefined);
      s.on("close", () => sockets.delete(s));
    }
    const pipe = (from: Socket, to: Socket) =>
      from.on("data", (chunk: Buffer) => {
        if (stalled) held.push(() => to.write(chunk));
        else to.write(chunk);
      });
    pipe(client, target);
    pipe(target, client);
    client.on("close", () => target.destroy());
    target.on("close", () => client.destroy());
  });
  server.listen(0, "127.0.0.1");
  await once(server, "listening");
  const { port } = server.address() as { port: number };
  return {
    url: `redis://127.0.0.1:${port}`,
    stall() {
      stalled = true;
    },
    release() {
      stalled = false;
      for (const deliver of held.splice(0)) deliver();
    },
    async close() {
      for (const s of sockets) s.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
