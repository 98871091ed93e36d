import { HEDGE_AFTER_MS, log, type Services, simRecords, simReset } from "../services.js";
import { round, summary } from "../stats.js";
import { type ResilienceRun, resilienceRun, scriptCount } from "./failover.js";

// 7. Hedged first token -------------------------------------------------------
export async function hedgeScenario(s: Services) {
  const { requests } = s.size.hedge;
  await simReset(s);
  const plain = await resilienceRun(s, "heavy-tail", requests);
  const hedged = await resilienceRun(s, "hedged", requests);
  const records = await simRecords(s);
  const ttft = (run: ResilienceRun) => summary(run.results.filter((r) => r.ttftMs !== undefined).map((r) => r.ttftMs!));
  const upstream = (primary: string, backup: string) => scriptCount(records, primary) + scriptCount(records, backup);
  const result = {
    requests,
    afterMs: HEDGE_AFTER_MS,
    withoutHedge: ttft(plain),
    withHedge: ttft(hedged),
    upstreamWithout: upstream("tail", "tail-backup"),
    upstreamWith: upstream("hedge", "hedge-backup"),
    errors: plain.results.filter((r) => r.error).length + hedged.results.filter((r) => r.error).length,
  };
  log(`hedge: TTFT p99 ${round(result.withoutHedge.p99)} → ${round(result.withHedge.p99)} ms, upstream requests ${result.upstreamWithout} → ${result.upstreamWith}`);
  return result;
}
