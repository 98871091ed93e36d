import type { RequestRecord } from "../../src/simulator/records.js";
import { load, log, type Services, simIdle, simRecords, simReset, targetSpec, targets, withFloors } from "../services.js";
import { round, summary } from "../stats.js";

// 4. Cancellation -----------------------------------------------------------
export async function cancelScenario(s: Services) {
  const { total, tokens } = s.size.cancel;
  const out: Record<string, { closeMs: ReturnType<typeof summary>; clientSendMs: ReturnType<typeof summary>; tokensAfterAbort: ReturnType<typeof summary>; notClosed: number; ranToCompletion: number }> = {};
  for (const kind of withFloors(targets(s))) {
    await simIdle(s);
    await simReset(s);
    const seed = 7;
    const r = await load<{ aborts: Array<{ tag: string; abortAt: number; sentAt: number; received: number }> }>({
      scenario: "cancel",
      target: targetSpec(s, kind),
      total,
      concurrency: 50,
      prompt: `#sim tokens=${tokens} delay_ms=10`,
      seed,
    });
    // Wait (bounded) for the simulator to have seen every close.
    let records: RequestRecord[] = [];
    for (let i = 0; i < 40; i++) {
      records = await simRecords(s);
      if (records.filter((x) => x.endedAt !== undefined).length >= r.aborts.length) break;
      await fetch(`${s.simOrigin}/_sim/wait?timeout_ms=250&tag=__none__`);
    }
    const byTag = new Map(records.map((x) => [x.tag, x]));
    const close: number[] = [];
    const send: number[] = [];
    const after: number[] = [];
    let notClosed = 0;
    let ranToCompletion = 0;
    for (const a of r.aborts) {
      const rec = byTag.get(a.tag);
      if (!rec?.clientClosedAt) {
        // The upstream request outlived the client: generated for nobody.
        notClosed++;
        if (rec?.outcome === "completed") ranToCompletion++;
        continue;
      }
      // From when the cancel left the load generator: over HTTP/2 it waits for
      // the client's loop (RST_STREAM is written in its check phase), and a
      // load generator busy with 50 streams is no real client. That wait is
      // reported beside it, as the client's own.
      close.push(rec.clientClosedAt - a.sentAt);
      send.push(a.sentAt - a.abortAt);
      after.push(Math.max(0, rec.tokensWritten - a.received));
    }
    out[kind] = { closeMs: summary(close), clientSendMs: summary(send), tokensAfterAbort: summary(after), notClosed, ranToCompletion };
    log(
      `cancel ${kind}: close p50 ${round(out[kind]!.closeMs.p50)} p99 ${round(out[kind]!.closeMs.p99)} ms (client's own send p50 ${round(out[kind]!.clientSendMs.p50)} p99 ${round(out[kind]!.clientSendMs.p99)}), upstream not closed ${notClosed}`,
    );
  }
  return { total, results: out };
}
