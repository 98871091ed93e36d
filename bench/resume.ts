import { create } from "@bufbuild/protobuf";
import { createClient } from "@connectrpc/connect";
import { createGrpcTransport } from "@connectrpc/connect-node";
import { Role } from "../gen/sluice/v1/chat_pb.js";
import { ChatService, StreamChatRequestSchema } from "../gen/sluice/v1/chat_service_pb.js";
import { simulatedText } from "../src/simulator/text.js";
import type { ResumeSizes } from "./modes.js";
import { table } from "./report.js";
import { round, summary } from "./stats.js";

/**
 * Resumable streams (docs/streams.md, "Resumable streams"): what `resumable: true`
 * costs in TTFT and throughput against the same gateway and key without it,
 * in the same run with the rounds interleaved, and how long a reconnecting
 * client waits for its first replayed message. The gateway is the limited
 * one (Redis store), so the stream log is Redis Streams, as in production.
 * Clients run in this process: the figures are ratios, not absolutes.
 */
export interface ResumeResult {
  readonly ttft: Record<"off" | "on", ReturnType<typeof summary>>;
  readonly throughput: Record<"off" | "on", { readonly deltasPerS: number; readonly streams: number }>;
  /** Median of the on/off ratios of adjacent rounds. */
  readonly throughputRatio: number;
  /** CPU seconds per 100k text deltas in the throughput rounds: robust where wall-clock rates are not, on a shared machine. */
  readonly cpuPer100k: Record<"off" | "on", { readonly gateway: number; readonly redis?: number }>;
  readonly resumeLatency: ReturnType<typeof summary>;
  readonly errors: number;
}

type Lane = "off" | "on";

/** CPU seconds used so far by the gateway and by its Redis (when the benchmark runs its own). */
export interface CpuMeters {
  readonly gateway: () => number;
  readonly redis?: () => number;
}

export async function resumeScenario(url: string, apiKey: string, sizes: ResumeSizes, log: (m: string) => void, cpu: CpuMeters): Promise<ResumeResult> {
  const client = createClient(ChatService, createGrpcTransport({ baseUrl: url }));
  const headers = { authorization: `Bearer ${apiKey}` };
  const request = (prompt: string, resumable: boolean) => create(StreamChatRequestSchema, { model: "bench", messages: [{ role: Role.USER, content: [{ part: { case: "text", value: prompt } }] }], streamOptions: { resumable } });
  let errors = 0;

  /** Time to the first text delta, and the whole stream's text (counted in characters: the gRPC edge joins deltas that arrive together, except on resumable streams). */
  const one = async (prompt: string, lane: Lane): Promise<{ ttftMs: number; chars: number }> => {
    const t0 = performance.now();
    let ttftMs = Number.NaN;
    let chars = 0;
    try {
      for await (const m of client.streamChat(request(prompt, lane === "on"), { headers })) {
        if (m.delta.case !== "text") continue;
        if (chars === 0) ttftMs = performance.now() - t0;
        chars += m.delta.value.text.length;
      }
    } catch {
      errors++;
    }
    return { ttftMs, chars };
  };
  const pool = async <T>(count: number, concurrency: number, work: () => Promise<T>): Promise<T[]> => {
    const out: T[] = [];
    let next = 0;
    await Promise.all(
      Array.from({ length: concurrency }, async () => {
        while (next++ < count) out.push(await work());
      }),
    );
    return out;
  };

  const rounds = 4;
  const { warmUp, ttftPerRound, tokens, pairs, samples } = sizes;
  const ttft: Record<Lane, number[]> = { off: [], on: [] };
  // TTFT one stream at a time: on a shared 2-core machine queueing at any concurrency drowns a per-request cost of a Redis round trip.
  for (const lane of ["off", "on"] as const) await pool(warmUp, 1, () => one("#sim tokens=2", lane)); // warm-up
  for (let r = 0; r < rounds; r++) {
    for (const lane of r % 2 === 0 ? (["off", "on"] as const) : (["on", "off"] as const)) {
      const got = await pool(ttftPerRound, 1, () => one("#sim tokens=2", lane));
      ttft[lane].push(...got.map((g) => g.ttftMs).filter(Number.isFinite));
    }
  }

  // Throughput in pairs of rounds (off then on, or on then off): the machine's drift between two
  // adjacent rounds is small, between the first and the last it is not. The median pair ratio is the figure.
  const charsPerDelta = simulatedText(1, tokens).length / tokens;
  const throughput: Record<Lane, { deltas: number; ms: number; streams: number; gatewayCpu: number; redisCpu: number }> = {
    off: { deltas: 0, ms: 0, streams: 0, gatewayCpu: 0, redisCpu: 0 },
    on: { deltas: 0, ms: 0, streams: 0, gatewayCpu: 0, redisCpu: 0 },
  };
  const pairRatios: number[] = [];
  for (let r = 0; r < pairs; r++) {
    const rate: Partial<Record<Lane, number>> = {};
    for (const lane of r % 2 === 0 ? (["off", "on"] as const) : (["on", "off"] as const)) {
      const t0 = performance.now();
      const cpu0 = [cpu.gateway(), cpu.redis?.() ?? 0];
      const got = await pool(10, 10, () => one(`#sim tokens=${tokens}`, lane));
      const ms = performance.now() - t0;
      throughput[lane].gatewayCpu += cpu.gateway() - cpu0[0]!;
      throughput[lane].redisCpu += (cpu.redis?.() ?? 0) - cpu0[1]!;
      // Upstream deltas, from the text: every stream is the simulator's seed-1 text of `tokens` deltas.
      const deltas = got.reduce((sum, g) => sum + g.chars, 0) / charsPerDelta;
      throughput[lane].ms += ms;
      throughput[lane].deltas += deltas;
      throughput[lane].streams += got.length;
      rate[lane] = deltas / ms;
    }
    pairRatios.push(rate.on! / rate.off!);
  }

  // Reconnect → first replayed message: drop after 20 text deltas while the upstream goes on, resume at once, then cancel it.
  const latency: number[] = [];
  for (let i = 0; i < samples; i++) {
    const abort = new AbortController();
    let id = "";
    let last = 0n;
    let texts = 0;
    try {
      for await (const m of client.streamChat(request("#sim tokens=5000 delay_ms=1", true), { headers, signal: abort.signal })) {
        if (m.delta.case === "start") id = m.delta.value.responseId;
        last = m.sequence;
        if (m.delta.case === "text" && ++texts === 20) {
          abort.abort();
          break;
        }
      }
    } catch {
      // Our own abort.
    }
    const t0 = performance.now();
    try {
      for await (const _ of client.resumeStream({ responseId: id, afterSequence: last }, { headers })) {
        latency.push(performance.now() - t0);
        break;
      }
      await client.cancelStream({ responseId: id }, { headers });
    } catch {
      errors++;
    }
  }

  const result: ResumeResult = {
    ttft: { off: summary(ttft.off), on: summary(ttft.on) },
    throughput: {
      off: { deltasPerS: (throughput.off.deltas / throughput.off.ms) * 1000, streams: throughput.off.streams },
      on: { deltasPerS: (throughput.on.deltas / throughput.on.ms) * 1000, streams: throughput.on.streams },
    },
    throughputRatio: summary(pairRatios).p50,
    cpuPer100k: {
      off: { gateway: (throughput.off.gatewayCpu / throughput.off.deltas) * 100_000, ...(cpu.redis ? { redis: (throughput.off.redisCpu / throughput.off.deltas) * 100_000 } : {}) },
      on: { gateway: (throughput.on.gatewayCpu / throughput.on.deltas) * 100_000, ...(cpu.redis ? { redis: (throughput.on.redisCpu / throughput.on.deltas) * 100_000 } : {}) },
    },
    resumeLatency: summary(latency),
    errors,
  };
  log(
    `resume: TTFT p50 ${round(result.ttft.off.p50)} → ${round(result.ttft.on.p50)} ms (×${round(result.ttft.on.p50 / result.ttft.off.p50)}), throughput ×${round(result.throughputRatio)} (median of ${pairRatios.length} adjacent pairs), gateway CPU per 100k deltas ${round(result.cpuPer100k.off.gateway)} → ${round(result.cpuPer100k.on.gateway)} s, resume latency p50 ${round(result.resumeLatency.p50)} ms p99 ${round(result.resumeLatency.p99)} ms`,
  );
  return result;
}

/**
 * The run's top-level `resumable` figures, on ÷ off: throughput (median of
 * adjacent round pairs), gateway CPU per delta, TTFT p50; and the resume latency.
 */
export function resumableSummary(r: ResumeResult) {
  return {
    throughputRatio: r.throughputRatio,
    cpuRatio: r.cpuPer100k.on.gateway / r.cpuPer100k.off.gateway,
    ttftP50Ratio: r.ttft.on.p50 / r.ttft.off.p50,
    ttftAddedMs: r.ttft.on.p50 - r.ttft.off.p50,
    resumeLatencyP50Ms: r.resumeLatency.p50,
    resumeLatencyP99Ms: r.resumeLatency.p99,
  };
}

export function resumeSection(r: ResumeResult): string {
  return [
    "## Resumable streams (the Redis-store gateway, gRPC, same key; rounds of off and on interleaved in one run)",
    table(
      ["measure", "resumable off", "resumable on", "ratio on/off"],
      [
        ["TTFT p50 ms (one stream at a time, tokens=2)", round(r.ttft.off.p50), round(r.ttft.on.p50), round(r.ttft.on.p50 / r.ttft.off.p50)],
        ["TTFT p99 ms", round(r.ttft.off.p99), round(r.ttft.on.p99), round(r.ttft.on.p99 / r.ttft.off.p99)],
        ["throughput, text deltas/s (c=10; ratio: median of adjacent round pairs)", round(r.throughput.off.deltasPerS, 0), round(r.throughput.on.deltasPerS, 0), round(r.throughputRatio)],
        ["gateway CPU s per 100k text deltas", round(r.cpuPer100k.off.gateway), round(r.cpuPer100k.on.gateway), round(r.cpuPer100k.on.gateway / r.cpuPer100k.off.gateway)],
        ...(r.cpuPer100k.on.redis === undefined ? [] : [["Redis CPU s per 100k text deltas", round(r.cpuPer100k.off.redis!, 3), round(r.cpuPer100k.on.redis, 3), "—"]]),
      ],
    ),
    "",
    `Resume latency (ResumeStream called → first replayed message, ${r.resumeLatency.n} reconnects after 20 text deltas, upstream still streaming): p50 ${round(r.resumeLatency.p50)} ms, p99 ${round(r.resumeLatency.p99)} ms; that is ×${round(r.resumeLatency.p50 / r.ttft.on.p50)} of a fresh stream's TTFT p50. Errors: ${r.errors}.`,
    "",
  ].join("\n");
}
