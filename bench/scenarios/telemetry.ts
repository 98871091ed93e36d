import { createServer as createHttpServer } from "node:http";
import { simulatedText } from "../../src/simulator/text.js";
import { load, log, type Services, simReset, startGateway } from "../services.js";
import { round, summary } from "../stats.js";

// 8. Telemetry cost ---------------------------------------------------------------

/** An OTLP/HTTP receiver that accepts and drops every export: the cost measured is the gateway's, not a collector's. */
export async function startSink(): Promise<{ url: string; exports: () => number; close(): void }> {
  let exports = 0;
  const server = createHttpServer((req, res) => {
    req.resume();
    req.on("end", () => {
      exports++;
      res.writeHead(200, { "content-type": "application/json" });
      res.end("{}");
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return { url: `http://127.0.0.1:${(server.address() as { port: number }).port}`, exports: () => exports, close: () => server.close() };
}

export async function telemetryScenario(s: Services) {
  const sink = await startSink();
  const off = await startGateway(s, { telemetry: { metrics: { enabled: false } } });
  const on = await startGateway(s, { telemetry: { metrics: { enabled: true }, tracing: { exporter: "otlp", endpoint: `${sink.url}/v1/traces` } } });
  const { tokens, streams, rounds } = s.size.telemetry;
  // Every stream is the simulator's seed-1 text of `tokens` deltas.
  const charsPerDelta = simulatedText(1, tokens).length / tokens;
  const runs: Record<"off" | "on", Array<{ ttftP50: number; gatewayCpuSPer100k: number; deltasPerS: number }>> = { off: [], on: [] };
  try {
    // Alternate off and on, several rounds, and keep each one's median: machine noise then hits both alike.
    for (let round = 0; round < rounds; round++) {
      for (const [name, gw] of [
        ["off", off],
        ["on", on],
      ] as const) {
        const target = { kind: "sluice-grpc" as const, url: gw.url, model: "bench" };
        await load({ scenario: "ttft", target, concurrency: 1, perLane: 20, prompt: "#sim tokens=2" }); // warm-up
        const ttft = await load<{ samples: number[] }>({ scenario: "ttft", target, concurrency: 1, perLane: streams, prompt: "#sim tokens=2" });
        const before = gw.proc.cpuSeconds();
        const tp = await load<{ chars: number; wallMs: number }>({ scenario: "throughput", target, concurrency: 10, prompt: `#sim tokens=${tokens}` });
        // Upstream deltas, counted by text: the gRPC edge joins deltas that arrive together into one message.
        const deltas = tp.chars / charsPerDelta;
        runs[name].push({
          ttftP50: summary(ttft.samples).p50,
          gatewayCpuSPer100k: ((gw.proc.cpuSeconds() - before) / Math.max(1, deltas)) * 100_000,
          deltasPerS: deltas / (tp.wallMs / 1000),
        });
        await simReset(s);
      }
    }
    const median = (xs: number[]) => summary(xs).p50;
    const pick = (name: "off" | "on") => ({
      ttftP50: median(runs[name].map((r) => r.ttftP50)),
      gatewayCpuSPer100k: median(runs[name].map((r) => r.gatewayCpuSPer100k)),
      deltasPerS: median(runs[name].map((r) => r.deltasPerS)),
    });
    const out = { off: pick("off"), on: pick("on") };
    // Scrape once: the exposition itself must work on the instrumented gateway.
    const scraped = (await (await fetch(`${on.url}/metrics`)).text()).includes("gen_ai_server_time_to_first_token_bucket");
    await on.proc.stop(); // flushes its spans to the sink
    const result = {
      off: out.off,
      on: out.on,
      cpuRatio: out.on.gatewayCpuSPer100k / out.off.gatewayCpuSPer100k,
      ttftAddedMs: out.on.ttftP50 - out.off.ttftP50,
      rounds,
      spanExports: sink.exports(),
      scraped,
    };
    log(`telemetry: gateway CPU per 100k deltas ${round(out.off.gatewayCpuSPer100k)} → ${round(out.on.gatewayCpuSPer100k)} s, TTFT p50 ${round(out.off.ttftP50)} → ${round(out.on.ttftP50)} ms`);
    return result;
  } finally {
    await Promise.all([off.proc.stop(), on.proc.stop()]);
    sink.close();
  }
}
