import { afterAll, expect, it } from "vitest";
import type { InProcessSimulator } from "../../src/simulator/in-process.js";
import { createInMemoryGateway } from "../helpers/in-memory-gateway.js";

const gw = createInMemoryGateway({
  routing: (sim: InProcessSimulator) => ({ providers: { a: { kind: "openai" as const, baseUrl: sim.openAiBaseUrl } }, models: { m: { provider: "a", model: "sim-1?tokens=2" } } }),
} as never);
afterAll(() => gw.close());

it("ttft", async () => {
  const run = async (n: number) => {
    const ttfts: number[] = [];
    for (let i = 0; i < n; i++) {
      const t0 = performance.now();
      let first = 0;
      for await (const d of gw.stream("m", "hello there")) if (d.type === "text" && first === 0) first = performance.now() - t0;
      ttfts.push(first);
    }
    ttfts.sort((a, b) => a - b);
    return ttfts[Math.floor(n / 2)]!;
  };
  await run(2000);
  const results: number[] = [];
  for (let r = 0; r < 5; r++) results.push(await run(2000));
  console.log("TTFT_P50_US", results.map((x) => Math.round(x * 1000)).join(" "));
  expect(results.length).toBe(5);
}, 600_000);
