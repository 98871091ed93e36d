import { loadavg } from "node:os";
import { join } from "node:path";
import type { FloodResult, FloodSpec, ValidResult } from "../flood-client.js";
import { runJson } from "../procs.js";
import { BENCH_KEY, log, ROOT, type Services, simRecords, simReset } from "../services.js";
import { round, summary } from "../stats.js";
import type { TargetSpec } from "../targets.js";

const FLOOD_CLIENT = join(ROOT, "dist/bench/flood-client.js");
const PROMPT = "#sim tokens=2";

const run = <T>(spec: FloodSpec): Promise<T> => runJson<T>([FLOOD_CLIENT, JSON.stringify(spec)], spec.durationMs + 60_000);

/** One side of the comparison, summed over its rounds. */
interface Side {
  ttftMs: number[];
  streams: number;
  errors: number;
  gatewayCpuS: number;
}

/**
 * Key flood (issue #47): requests with random invalid keys at up to
 * `ratePerS` beside valid-key streaming on the gateway with keys and Redis
 * limits (`limited`), against the same valid streams alone, sides
 * alternated (A B B A …) so the machine's drift hits both. The flood and
 * the valid streams are two client processes of their own; the gateway's
 * CPU is read from /proc around each side. What it reports: upstream
 * requests the flood caused (its prompts carry a simulator tag, so any
 * that got through are in the simulator's records), the rejection latency
 * the flood client saw (send → answer read, worst round's p99), the
 * gateway CPU per rejection (the side's CPU less what its valid streams
 * cost alone, per stream, divided by the 401s), and the valid streams'
 * TTFT p50 beside the flood ÷ alone.
 */
export async function keyFloodScenario(s: Services) {
  const { ratePerS, durationMs, rounds, concurrency, connections, pipelining } = s.size.keyFlood;
  const target: TargetSpec = { kind: "sluice-sse", url: `${s.limitedUrl}/v1`, model: "bench", apiKey: BENCH_KEY };
  const floodSpec = (ms: number, rate: number): FloodSpec => ({ mode: "flood", url: `${s.limitedUrl}/v1`, model: "bench", ratePerS: rate, durationMs: ms, connections, pipelining });
  const validSpec = (ms: number): FloodSpec => ({ mode: "valid", target, concurrency, durationMs: ms, prompt: PROMPT });
  // Warm-up: both paths of the gateway and both clients' code, unmeasured.
  await Promise.all([run<ValidResult>(validSpec(1_000)), run<FloodResult>(floodSpec(1_000, ratePerS / 4))]);
  await simReset(s);

  const alone: Side = { ttftMs: [], streams: 0, errors: 0, gatewayCpuS: 0 };
  const beside: Side = { ttftMs: [], streams: 0, errors: 0, gatewayCpuS: 0 };
  const floods: FloodResult[] = [];
  for (let r = 0; r < rounds; r++) {
    for (const withFlood of r % 2 === 0 ? [false, true] : [true, false]) {
      const before = s.limited.cpuSeconds();
      const [valid, flood] = await Promise.all([run<ValidResult>(validSpec(durationMs)), withFlood ? run<FloodResult>(floodSpec(durationMs, ratePerS)) : undefined]);
      const side = withFlood ? beside : alone;
      side.gatewayCpuS += s.limited.cpuSeconds() - before;
      side.ttftMs.push(...valid.ttftMs);
      side.streams += valid.streams;
      side.errors += valid.errors;
      if (flood) {
        floods.push(flood);
        log(
          `key flood round ${r + 1}: ${flood.sent} sent in ${round(flood.wallMs / 1000)} s (${flood.skipped} skipped), ${JSON.stringify(flood.statuses)}, ${flood.errors} errors; rejection p50 ${round(flood.latencyMs.p50, 3)} ms p99 ${round(flood.latencyMs.p99, 3)} ms`,
        );
      }
    }
  }
  const upstreamFromFlood = (await simRecords(s)).filter((record) => record.tag === "key-flood").length;
  const rejected = floods.reduce((n, f) => n + (f.statuses["401"] ?? 0), 0);
  const sent = floods.reduce((n, f) => n + f.sent, 0);
  const floodWallS = floods.reduce((n, f) => n + f.wallMs, 0) / 1000;
  const validCpuPerStream = alone.gatewayCpuS / Math.max(1, alone.streams);
  const floodCpuS = beside.gatewayCpuS - validCpuPerStream * beside.streams;
  const ttftAlone = summary(alone.ttftMs);
  const ttftBeside = summary(beside.ttftMs);
  const result = {
    ratePerS,
    achievedPerS: sent / floodWallS,
    sent,
    rejected,
    otherAnswers: sent - rejected - floods.reduce((n, f) => n + f.errors, 0),
    wireErrors: floods.reduce((n, f) => n + f.errors, 0),
    skipped: floods.reduce((n, f) => n + f.skipped, 0),
    upstreamFromFlood,
    rejectionMs: { p50: Math.max(...floods.map((f) => f.latencyMs.p50)), p99: Math.max(...floods.map((f) => f.latencyMs.p99)) },
    gatewayCpuUsPerRejection: (floodCpuS * 1e6) / Math.max(1, rejected),
    ttftP50Ms: { alone: ttftAlone.p50, beside: ttftBeside.p50 },
    ttftRatio: ttftBeside.p50 / ttftAlone.p50,
    validErrors: alone.errors + beside.errors,
    validStreams: { alone: alone.streams, beside: beside.streams },
    // Latency and CPU per request are absolute figures: a machine busy with other work inflates them (its 1-minute load, for the reader).
    loadAverage: loadavg()[0],
  };
  log(
    `key flood: ${round(result.achievedPerS, 0)}/s of ${ratePerS}/s asked, ${rejected} rejected, ${upstreamFromFlood} upstream; rejection p99 ${round(result.rejectionMs.p99, 3)} ms; ${round(result.gatewayCpuUsPerRejection, 1)} µs gateway CPU per rejection; valid TTFT p50 ${round(ttftAlone.p50, 3)} → ${round(ttftBeside.p50, 3)} ms (×${round(result.ttftRatio, 3)})`,
  );
  return result;
}
