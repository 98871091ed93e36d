import { load, log, type Services, simReset, targetSpec, targets, withFloors } from "../services.js";
import { round, summary } from "../stats.js";
import type { TargetKind } from "../targets.js";

// 1. TTFT overhead ---------------------------------------------------------
export async function ttftScenario(s: Services) {
  const { levels, streams, warmUp, warmUpEachLevel } = s.size.ttft;
  const prompt = "#sim tokens=2";
  // `headerP50`: the path's own `sluice-overhead-ms` p50 (Sluice's edges), checked against the added TTFT measured here (bench/goals.ts).
  const results: Record<string, Record<number, { p50: number; p99: number; n: number; errors: number; headerP50?: number }>> = {};
  // This is the first scenario: without a warm-up it measured a gateway whose
  // JIT had seen a handful of requests (a fresh gateway's first thousand
  // streams cost about twice the CPU of later ones), not a gateway in service.
  // The gRPC edge is also measured through connect-node's client, whose own
  // CPU (it shares the two cores) is part of what its callers see.
  const kinds: TargetKind[] = [...withFloors(targets(s)), "sluice-grpc-connect"];
  for (const kind of kinds) await load({ scenario: "ttft", target: targetSpec(s, kind), ...warmUp, prompt });
  for (const concurrency of levels) {
    for (const kind of kinds) {
      // Interleave targets per level so that machine noise hits all alike.
      const perLane = Math.max(1, Math.ceil((concurrency === 1 ? streams / 4 : streams) / concurrency));
      if (warmUpEachLevel) await load({ scenario: "ttft", target: targetSpec(s, kind), concurrency: Math.min(concurrency, 50), perLane: 2, prompt });
      const r = await load<{ samples: number[]; errors: number; overheadMs: number[] }>({ scenario: "ttft", target: targetSpec(s, kind), concurrency, perLane, prompt });
      const header = r.overheadMs.length > 0 ? { headerP50: summary(r.overheadMs).p50 } : {};
      (results[kind] ??= {})[concurrency] = { ...summary(r.samples), errors: r.errors, ...header };
      const headerNote = header.headerP50 === undefined ? "" : `; sluice-overhead-ms p50 ${round(header.headerP50, 3)} ms`;
      log(`ttft c=${concurrency} ${kind}: p50 ${round(results[kind]![concurrency]!.p50)} ms p99 ${round(results[kind]![concurrency]!.p99)} ms (${r.samples.length} streams, ${r.errors} errors)${headerNote}`);
    }
    await simReset(s);
  }
  return { levels, results };
}
