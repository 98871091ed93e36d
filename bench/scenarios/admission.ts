import { execFileSync } from "node:child_process";
import { table } from "../report.js";
import { BENCH_KEY, BENCH_TEAM_KEY, load, log, type Services, simReset, targetSpec } from "../services.js";
import { round, summary } from "../stats.js";

// 9. Admission with Redis limits -------------------------------------------------
/** TTFT per lane ("gRPC, Redis limits", …) and concurrency. */
export type AdmissionLanes = Record<string, Record<number, ReturnType<typeof summary>>>;
/** Per edge and concurrency, what the limits add to TTFT p50: limited − plain (ms) and limited ÷ plain. */
export type AdmissionAdded = Record<number, { addedMs: number; ratio: number }>;
/** The lanes' figures under their labels, the edges' added TTFT under `grpc` and `sse`, and what three levels add over the key alone under `hierarchy`. */
export type AdmissionResults = { readonly grpc: AdmissionAdded; readonly sse: AdmissionAdded; readonly hierarchy: { readonly grpc: AdmissionAdded; readonly sse: AdmissionAdded } } & {
  readonly [lane: string]: Record<number, ReturnType<typeof summary>> | AdmissionAdded;
};
export const admissionLane = (r: { results: AdmissionResults }, label: string) => r.results[label] as Record<number, ReturnType<typeof summary>>;
/** Calls per command name since the Redis started (INFO commandstats). */
export function redisCommandCalls(port: number): Record<string, number> {
  const text = execFileSync("redis-cli", ["-h", "127.0.0.1", "-p", String(port), "info", "commandstats"], { encoding: "utf8" });
  const calls: Record<string, number> = {};
  for (const match of text.matchAll(/^cmdstat_([\w|]+):calls=(\d+)/gm)) calls[match[1]!] = Number(match[2]);
  return calls;
}

export async function admissionScenario(s: Services) {
  const levels = [1, 100];
  const { streamsPerLevel, rounds } = s.size.admission;
  const prompt = "#sim tokens=2";
  const lanes = [
    { label: "gRPC, no limits", spec: targetSpec(s, "sluice-grpc") },
    { label: "gRPC, Redis limits", spec: { kind: "sluice-grpc" as const, url: s.limitedUrl, model: "bench", apiKey: BENCH_KEY } },
    { label: "SSE, no limits", spec: targetSpec(s, "sluice-sse") },
    { label: "SSE, Redis limits", spec: { kind: "sluice-sse" as const, url: `${s.limitedUrl}/v1`, model: "bench", apiKey: BENCH_KEY } },
    { label: "gRPC, Redis limits, 3 levels", spec: { kind: "sluice-grpc" as const, url: s.limitedUrl, model: "bench", apiKey: BENCH_TEAM_KEY } },
    { label: "SSE, Redis limits, 3 levels", spec: { kind: "sluice-sse" as const, url: `${s.limitedUrl}/v1`, model: "bench", apiKey: BENCH_TEAM_KEY } },
  ];
  const limitedLanes = lanes.filter((l) => l.label.includes("Redis")).length;
  const samples: Record<string, Record<number, number[]>> = {};
  const errors: Record<string, number> = {};
  let limitedStreams = 0;
  for (const lane of lanes) await load({ scenario: "ttft", target: lane.spec, concurrency: 20, perLane: 2, prompt }); // warm-up
  limitedStreams += limitedLanes * 20 * 2;
  const before = redisCommandCalls(s.redisPort);
  for (const concurrency of levels) {
    const perLane = Math.max(1, Math.ceil(streamsPerLevel / rounds / concurrency));
    for (let round = 0; round < rounds; round++) {
      // Alternate the order per round, so drift on a shared machine hits both sides alike.
      for (const lane of round % 2 === 0 ? lanes : [...lanes].reverse()) {
        const r = await load<{ samples: number[]; errors: number }>({ scenario: "ttft", target: lane.spec, concurrency, perLane, prompt });
        ((samples[lane.label] ??= {})[concurrency] ??= []).push(...r.samples);
        errors[lane.label] = (errors[lane.label] ?? 0) + r.errors;
        if (lane.label.includes("Redis")) limitedStreams += r.samples.length + r.errors;
      }
    }
    await simReset(s);
  }
  const after = redisCommandCalls(s.redisPort);
  const measuredLimited = limitedStreams - limitedLanes * 20 * 2;
  const delta = (name: string) => (after[name] ?? 0) - (before[name] ?? 0);
  const scripts = delta("evalsha") + delta("eval");
  // INFO commandstats also counts the commands a script runs inside Redis: those are not round trips.
  const polls = delta("get") + delta("hvals");
  const inside = Object.keys(after).reduce((sum, name) => sum + delta(name), 0) - scripts - polls;
  const lanesOut = Object.fromEntries(Object.entries(samples).map(([label, byLevel]) => [label, Object.fromEntries(Object.entries(byLevel).map(([c, v]) => [c, summary(v)]))])) as AdmissionLanes;
  // Beside each lane's TTFT, per edge and level: what the limits add (limited − plain p50) and their ratio.
  const edge = (name: string, base = "no limits", over = "Redis limits") =>
    Object.fromEntries(
      levels.map((c) => {
        const plain = lanesOut[`${name}, ${base}`]![c]!.p50;
        const limited = lanesOut[`${name}, ${over}`]![c]!.p50;
        return [c, { addedMs: limited - plain, ratio: limited / plain }];
      }),
    );
  const hierarchy = { grpc: edge("gRPC", "Redis limits", "Redis limits, 3 levels"), sse: edge("SSE", "Redis limits", "Redis limits, 3 levels") };
  const result = {
    levels,
    results: { ...lanesOut, grpc: edge("gRPC"), sse: edge("SSE"), hierarchy } as AdmissionResults,
    errors,
    limitedStreams: measuredLimited,
    scriptCallsPerStream: scripts / measuredLimited,
    commandsInsideScriptsPerStream: inside / measuredLimited,
    keyListPolls: polls,
    ownRedis: s.redis !== undefined,
  };
  for (const c of levels) {
    for (const name of ["gRPC", "SSE"]) {
      const plain = lanesOut[`${name}, no limits`]![c]!.p50;
      const limited = lanesOut[`${name}, Redis limits`]![c]!.p50;
      log(`admission c=${c} ${name}: TTFT p50 ${round(plain)} → ${round(limited)} ms (+${round(limited - plain)} ms, ×${round(limited / plain)})`);
      const three = lanesOut[`${name}, Redis limits, 3 levels`]![c]!.p50;
      log(`admission c=${c} ${name}: key, team and business line ${round(three)} ms (+${round(three - limited)} ms over the key alone)`);
    }
  }
  log(`admission: ${round(result.scriptCallsPerStream)} script calls per limited stream (admission + settle), ${round(result.commandsInsideScriptsPerStream)} commands inside them`);
  return result;
}

export function admissionSection(r: Awaited<ReturnType<typeof admissionScenario>>): string {
  const rows = r.levels.flatMap((c) =>
    ["gRPC", "SSE"].map((edge) => {
      const plain = admissionLane(r, `${edge}, no limits`)[c]!;
      const limited = admissionLane(r, `${edge}, Redis limits`)[c]!;
      const three = admissionLane(r, `${edge}, Redis limits, 3 levels`)[c]!;
      return [
        String(c),
        edge,
        plain.p50,
        limited.p50,
        round(limited.p50 - plain.p50),
        round(limited.p50 / plain.p50),
        three.p50,
        round(three.p50 - limited.p50),
        `${plain.n} / ${limited.n} / ${three.n}`,
        `${r.errors[`${edge}, no limits`] ?? 0} / ${r.errors[`${edge}, Redis limits`] ?? 0} / ${r.errors[`${edge}, Redis limits, 3 levels`] ?? 0}`,
      ];
    }),
  );
  return [
    `## 9. Admission with Redis limits (a virtual key with every limit and a budget, one Redis script per admission; same run, same simulator)`,
    table(
      ["concurrent streams", "edge", "TTFT p50 no limits ms", "TTFT p50 Redis limits ms", "added ms", "ratio", "TTFT p50 key + team + business line ms", "added over the key alone ms", "streams (no limits / key / 3 levels)", "errors"],
      rows,
    ),
    "",
    `Redis round trips per limited stream: ${round(r.scriptCallsPerStream)} script calls (one admission before the first attempt, one settle after the last delta), running ${round(r.commandsInsideScriptsPerStream)} commands inside Redis between them; besides, ${r.keyListPolls} reads of the key list's version (a poll every 250 ms, not per request)${r.ownRedis ? "" : "; shared Redis: counts include other clients"}.`,
    "",
  ].join("\n");
}
