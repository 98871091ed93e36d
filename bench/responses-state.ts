import { writeFile } from "node:fs/promises";
import { join } from "node:path";
import pg from "pg";
import { stringify } from "yaml";
import { BENCH_TIMEOUTS, launchGateway } from "./gateway-launch.js";
import type { Proc } from "./procs.js";
import { round, summary } from "./stats.js";

/** The PostgreSQL server the by-URL run uses: the machine's (the Debian server the tests use). */
const SERVER_URL = process.env.SLUICE_BENCH_POSTGRES_URL ?? "postgres://postgres:postgres@127.0.0.1:5432/postgres";

export interface ResponsesStateSizes {
  /** Turns in the conversation a measured turn continues (issue #46 asks for 20). */
  readonly turns: number;
  /** Measured pairs (a continued turn, then the same request sent whole). */
  readonly pairs: number;
  /** Calls per side of the write-cost measurement (store: true against store: false). */
  readonly writes: number;
}

/** One store's figures: added TTFT of a continued turn over the same request whole, and the CPU a stored response costs. */
export interface ResponsesStateResult {
  readonly store: "memory" | "pglite" | "server";
  readonly ttftChainP50Ms: number;
  readonly ttftWholeP50Ms: number;
  readonly ttftChainP99Ms: number;
  readonly ttftWholeP99Ms: number;
  /** p50 of the pairwise differences (continued minus whole): each pair ran back to back, so machine noise hits both. */
  readonly addedP50Ms: number;
  readonly cpuUsPerCallStored: number;
  readonly cpuUsPerCallUnstored: number;
  /** Gateway CPU a stored response adds, as a share of an unstored call's. */
  readonly writeCpuShare: number;
}

interface Turn {
  readonly id: string;
  /** The items this turn sent and received, as the next turn would send them whole. */
  readonly items: unknown[];
}

/** Milliseconds to the first text delta of a streamed `POST /v1/responses`, and the final response. */
async function streamed(url: string, body: Record<string, unknown>): Promise<{ ttftMs: number; response: { id: string; output: unknown[] } }> {
  const started = performance.now();
  const res = await fetch(`${url}/v1/responses`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ ...body, stream: true }) });
  if (!res.ok || !res.body) throw new Error(`responses ${res.status}: ${await res.text()}`);
  let ttftMs = Number.NaN;
  let buffered = "";
  let response: { id: string; output: unknown[] } | undefined;
  const decoder = new TextDecoder();
  for await (const chunk of res.body) {
    buffered += decoder.decode(chunk as Uint8Array, { stream: true });
    let end = buffered.indexOf("\n\n");
    while (end >= 0) {
      const frame = buffered.slice(0, end);
      buffered = buffered.slice(end + 2);
      end = buffered.indexOf("\n\n");
      const data = /^data: (.*)$/m.exec(frame)?.[1];
      if (data === undefined) continue;
      const event = JSON.parse(data) as { type: string; response?: { id: string; output: unknown[] } };
      if (event.type === "response.output_text.delta" && Number.isNaN(ttftMs)) ttftMs = performance.now() - started;
      if (event.type === "response.completed") response = event.response;
      if (event.type === "response.failed" || event.type === "error") throw new Error(`responses failed: ${data}`);
    }
  }
  if (!response) throw new Error("no response.completed");
  return { ttftMs, response };
}

/** A conversation of `turns` stored turns, each continuing the one before. */
async function conversation(url: string, turns: number): Promise<Turn[]> {
  const out: Turn[] = [];
  for (let i = 0; i < turns; i++) {
    const input = [{ role: "user", content: `turn ${i}: tell me about topic ${i}\n#sim tokens=24` }];
    const previous = out.at(-1)?.id;
    const { response } = await streamed(url, { model: "bench", input, store: true, ...(previous ? { previous_response_id: previous } : {}) });
    out.push({ id: response.id, items: [...input, ...response.output] });
  }
  return out;
}

async function cpuPerCall(url: string, gateway: Proc, calls: number, store: boolean): Promise<number> {
  const before = gateway.cpuSeconds();
  for (let i = 0; i < calls; i++) await streamed(url, { model: "bench", input: `write ${i}: a question of a few words\n#sim tokens=16`, store });
  return ((gateway.cpuSeconds() - before) * 1e6) / calls;
}

async function serverDatabase(): Promise<{ url: string; drop(): Promise<void> } | undefined> {
  const name = `sluice_bench_${process.pid}`;
  const admin = new pg.Client({ connectionString: SERVER_URL });
  try {
    await admin.connect();
  } catch {
    return undefined;
  }
  await admin.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
  await admin.query(`CREATE DATABASE ${name}`);
  const url = new URL(SERVER_URL);
  url.pathname = `/${name}`;
  return {
    url: url.toString(),
    async drop() {
      await admin.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
      await admin.end();
    },
  };
}

async function measure(store: ResponsesStateResult["store"], simOpenAi: string, dir: string, sizes: ResponsesStateSizes, postgres: Record<string, unknown> | undefined, log: (m: string) => void): Promise<ResponsesStateResult> {
  const configFile = join(dir, `responses-${store}.yaml`);
  await writeFile(
    configFile,
    stringify({
      log: { level: "info" },
      providers: { sim: { kind: "openai", baseUrl: simOpenAi, timeouts: BENCH_TIMEOUTS } },
      models: { bench: { provider: "sim", model: "sim-1" } },
      ...(postgres ? { store: { postgres } } : {}),
    }),
  );
  const { proc: gateway, url } = await launchGateway(process.cwd(), configFile);
  try {
    const turns = await conversation(url, sizes.turns);
    const last = turns.at(-1)!;
    const next = [{ role: "user", content: "and one more question\n#sim tokens=24" }];
    const whole = [...turns.flatMap((t) => t.items), ...next];
    // Warm both paths (the JIT, the database's plan cache) before timing.
    for (let i = 0; i < 20; i++) {
      await streamed(url, { model: "bench", input: next, previous_response_id: last.id, store: false });
      await streamed(url, { model: "bench", input: whole, store: false });
    }
    const chain: number[] = [];
    const plain: number[] = [];
    const added: number[] = [];
    for (let i = 0; i < sizes.pairs; i++) {
      const a = (await streamed(url, { model: "bench", input: next, previous_response_id: last.id, store: false })).ttftMs;
      const b = (await streamed(url, { model: "bench", input: whole, store: false })).ttftMs;
      chain.push(a);
      plain.push(b);
      added.push(a - b);
    }
    await cpuPerCall(url, gateway, Math.min(50, sizes.writes), true);
    const unstored = await cpuPerCall(url, gateway, sizes.writes, false);
    const stored = await cpuPerCall(url, gateway, sizes.writes, true);
    const c = summary(chain);
    const w = summary(plain);
    const result: ResponsesStateResult = {
      store,
      ttftChainP50Ms: round(c.p50, 3),
      ttftWholeP50Ms: round(w.p50, 3),
      ttftChainP99Ms: round(c.p99, 3),
      ttftWholeP99Ms: round(w.p99, 3),
      addedP50Ms: round(summary(added).p50, 3),
      cpuUsPerCallStored: round(stored, 1),
      cpuUsPerCallUnstored: round(unstored, 1),
      writeCpuShare: round((stored - unstored) / unstored, 4),
    };
    log(
      `responses-state ${store}: ${sizes.turns}-turn continuation TTFT p50 ${result.ttftChainP50Ms} ms vs whole ${result.ttftWholeP50Ms} ms (paired added p50 ${result.addedP50Ms} ms); CPU/call stored ${result.cpuUsPerCallStored} µs vs ${result.cpuUsPerCallUnstored} µs (${round(result.writeCpuShare * 100, 1)} %)`,
    );
    return result;
  } finally {
    await gateway.stop();
  }
}

/**
 * Issue #46's goals: a `previous_response_id` turn of a 20-turn
 * conversation against the same request sent whole (TTFT, ≤ +2 ms), and
 * the gateway CPU a stored response's write costs (≤ 3 % per call), in
 * memory (the default), with the embedded PGlite and with a PostgreSQL
 * server by URL.
 */
export async function responsesStateScenario(simOpenAi: string, dir: string, sizes: ResponsesStateSizes, log: (m: string) => void): Promise<ResponsesStateResult[]> {
  // Without store.postgres responses are kept in memory; store.postgres: {} is the embedded PGlite; a URL, the server.
  const results = [await measure("memory", simOpenAi, dir, sizes, undefined, log), await measure("pglite", simOpenAi, dir, sizes, {}, log)];
  const server = await serverDatabase();
  if (!server) {
    log(`responses-state server: skipped, no PostgreSQL at ${new URL(SERVER_URL).host}`);
    return results;
  }
  try {
    results.push(await measure("server", simOpenAi, dir, sizes, { url: server.url }, log));
  } finally {
    await server.drop();
  }
  return results;
}
