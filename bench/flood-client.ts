import { randomBytes } from "node:crypto";
import { Agent, request } from "undici";
import { summary } from "./stats.js";
import { createTarget, type TargetSpec } from "./targets.js";

/**
 * The key-flood scenario's two clients, each a process of its own so that
 * neither shares an event loop with the other or with the orchestrator:
 * `flood` sends requests with random invalid keys at a paced rate, `valid`
 * streams with a real key for the same time and times each first token.
 */
export type FloodSpec =
  | {
      readonly mode: "flood";
      /** The gateway's OpenAI base URL (`…/v1`). */
      readonly url: string;
      readonly model: string;
      readonly ratePerS: number;
      readonly durationMs: number;
      readonly connections: number;
      readonly pipelining: number;
    }
  | { readonly mode: "valid"; readonly target: TargetSpec; readonly concurrency: number; readonly durationMs: number; readonly prompt: string };

/** What the flood client saw: requests sent, answered by status, failed on the wire, and each answer's latency (send → body read). */
export interface FloodResult {
  readonly sent: number;
  readonly statuses: Readonly<Record<string, number>>;
  readonly errors: number;
  /** The wire errors by code (undici's `UND_ERR_…`, the socket's `ECONNRESET`…). */
  readonly errorCodes: Readonly<Record<string, number>>;
  /** Requests the schedule called for but the client could not send (its own in-flight bound): the client, not the gateway, was the limit. */
  readonly skipped: number;
  readonly wallMs: number;
  readonly latencyMs: { readonly n: number; readonly p50: number; readonly p99: number; readonly max: number };
}

export interface ValidResult {
  readonly ttftMs: readonly number[];
  readonly streams: number;
  readonly errors: number;
}

/** How often the pacer wakes: each wake sends what the schedule owes since the last (10 000/s is 20 a wake). */
const TICK_MS = 2;

async function flood(spec: Extract<FloodSpec, { mode: "flood" }>): Promise<FloodResult> {
  const dispatcher = new Agent({ connections: spec.connections, pipelining: spec.pipelining, keepAliveTimeout: 30_000 });
  // Tagged, so a request that reached the upstream would be found in the simulator's records.
  const body = JSON.stringify({ model: spec.model, stream: true, messages: [{ role: "user", content: "#sim tag=key-flood tokens=2" }] });
  const maxInFlight = spec.connections * spec.pipelining * 4;
  const latencies: number[] = [];
  const statuses: Record<string, number> = {};
  let sent = 0;
  let errors = 0;
  const errorCodes: Record<string, number> = {};
  let skipped = 0;
  let inFlight = 0;
  const pending = new Set<Promise<void>>();
  const one = async () => {
    const started = performance.now();
    try {
      const res = await request(`${spec.url}/chat/completions`, {
        method: "POST",
        // A different unknown key each time: nothing the gateway could have remembered of the last one.
        headers: { "content-type": "application/json", authorization: `Bearer sk-${randomBytes(16).toString("hex")}` },
        body,
        dispatcher,
      });
      await res.body.dump();
      latencies.push(performance.now() - started);
      statuses[res.statusCode] = (statuses[res.statusCode] ?? 0) + 1;
    } catch (error) {
      errors++;
      const code = String((error as { code?: unknown }).code ?? (error as Error).name);
      errorCodes[code] = (errorCodes[code] ?? 0) + 1;
    }
  };
  const started = performance.now();
  await new Promise<void>((resolve) => {
    const timer = setInterval(() => {
      const elapsed = performance.now() - started;
      const owed = Math.floor((Math.min(elapsed, spec.durationMs) * spec.ratePerS) / 1000) - sent - skipped;
      for (let i = 0; i < owed; i++) {
        if (inFlight >= maxInFlight) {
          skipped++;
          continue;
        }
        sent++;
        inFlight++;
        const p = one().finally(() => {
          inFlight--;
          pending.delete(p);
        });
        pending.add(p);
      }
      if (elapsed >= spec.durationMs) {
        clearInterval(timer);
        resolve();
      }
    }, TICK_MS);
  });
  await Promise.all(pending);
  const wallMs = performance.now() - started;
  await dispatcher.close();
  return { sent, statuses, errors, errorCodes, skipped, wallMs, latencyMs: summary(latencies) };
}

async function valid(spec: Extract<FloodSpec, { mode: "valid" }>): Promise<ValidResult> {
  const target = createTarget(spec.target);
  const ttftMs: number[] = [];
  let streams = 0;
  let errors = 0;
  const until = performance.now() + spec.durationMs;
  await Promise.all(
    Array.from({ length: spec.concurrency }, async () => {
      while (performance.now() < until) {
        const started = performance.now();
        let first: number | undefined;
        try {
          await target.stream(spec.prompt, new AbortController().signal, () => {
            first ??= performance.now() - started;
          });
          streams++;
          if (first !== undefined) ttftMs.push(first);
        } catch {
          errors++;
        }
      }
    }),
  );
  await target.close();
  return { ttftMs, streams, errors };
}

async function main(): Promise<void> {
  const spec = JSON.parse(process.argv[2]!) as FloodSpec;
  const result = spec.mode === "flood" ? await flood(spec) : await valid(spec);
  process.stdout.write(`${JSON.stringify(result)}\n`);
  process.exit(0);
}

void main();
