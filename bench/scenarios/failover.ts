import type { RequestRecord } from "../../src/simulator/records.js";
import { load, log, type Services, simRecords, simReset } from "../services.js";
import { round, summary } from "../stats.js";

// 6. Failover ------------------------------------------------------------------
export type ResilienceRun = { results: Array<{ ttftMs?: number; provider?: string; error?: string }> };

export async function resilienceRun(s: Services, model: string, requests: number): Promise<ResilienceRun> {
  return load<ResilienceRun>({ scenario: "resilience", target: { kind: "sluice-grpc", url: s.gatewayUrl, model }, requests, concurrency: 10, prompt: "hi" });
}

export const scriptCount = (records: RequestRecord[], script: string) => records.filter((r) => r.model.endsWith(`script=${script}`)).length;

export async function failoverScenario(s: Services) {
  const { requests } = s.size.failover;
  await simReset(s);
  const alone = await resilienceRun(s, "primary-only", requests);
  const both = await resilienceRun(s, "failover", requests);
  const records = await simRecords(s);
  const ttft = (run: ResilienceRun, provider: string) => summary(run.results.filter((r) => r.provider === provider && r.ttftMs !== undefined).map((r) => r.ttftMs!));
  const result = {
    requests,
    errorRateWithoutFailover: alone.results.filter((r) => r.error).length / requests,
    errorRate: both.results.filter((r) => r.error).length / requests,
    failedOver: both.results.filter((r) => r.provider === "backup").length,
    primaryFailures: records.filter((r) => r.model.endsWith("script=fo") && r.outcome === "failed").length,
    servedByPrimary: ttft(both, "primary"),
    failedOverTtft: ttft(both, "backup"),
  };
  log(`failover: error rate ${result.errorRate} (without failover ${result.errorRateWithoutFailover}), ${result.failedOver} failed over, TTFT p50 ${round(result.servedByPrimary.p50)} → ${round(result.failedOverTtft.p50)} ms`);
  return result;
}
