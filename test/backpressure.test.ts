import { readFileSync } from "node:fs";
import { setTimeout as delay } from "node:timers/promises";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type Simulator, startSimulator } from "../src/simulator/server.js";
import { chatClient, collect, transports, userRequest } from "./helpers/clients.js";
import { type GatewayProcess, runtimeStats, startGatewayProcess } from "./helpers/gateway-process.js";

const MiB = 1024 * 1024;
const TOKEN_CHARS = 10_000;
const TOKENS = 5_000; // 50 MB the simulator could write at once
/** The most a loopback TCP connection can hold in kernel buffers (send + receive), from the kernel's own limits. */
const SOCKET_BUFFERS = ["/proc/sys/net/ipv4/tcp_rmem", "/proc/sys/net/ipv4/tcp_wmem"].map((f) => Number(readFileSync(f, "utf8").trim().split(/\s+/)[2])).reduce((a, b) => a + b, 0);

/**
 * What the gateway holds, after a collection: its live JS heap and the
 * Buffers outside it. RSS was the measure before, and on a loaded machine
 * it moved with when V8 chose to grow or shrink its heap (a CI run: +48
 * MiB while the upstream was held back as it should be), not with what a
 * stream kept.
 */
const held = async (url: string) => {
  const stats = await runtimeStats(url, "?gc=1");
  return stats.heapUsedBytes + stats.externalBytes;
};

let sim: Simulator;
let gw: GatewayProcess;
beforeAll(async () => {
  sim = await startSimulator();
  gw = await startGatewayProcess(
    {
      log: { level: "info" },
      server: { debugEndpoints: true },
      providers: { sim: { kind: "openai", baseUrl: sim.openAiBaseUrl } },
      models: { sim: { provider: "sim", model: "sim-1" } },
    },
    { nodeArgs: ["--expose-gc"] },
  );
});
afterAll(async () => {
  await gw?.stop();
  await sim?.close();
});

describe("a slow client slows the upstream read; gateway memory stays flat", () => {
  for (const transport of ["grpc (connect-node, h2)", "connect (connect-node, HTTP/1.1)"]) {
    it(transport, async () => {
      const client = chatClient(transports(gw.url)[transport]!);
      // Warm up with a fast full-size stream so the heap has settled at its working size.
      await collect(client.streamChat(userRequest("sim", `#sim tokens=1000 token_chars=${TOKEN_CHARS}`)));
      const baseline = await held(gw.url);
      const rssBefore = gw.rss();
      const tag = `bp-${transport.replace(/\W+/g, "-")}`;
      const abort = new AbortController();
      let delivered = 0;
      let reads = 0;
      let peak = baseline;
      const heldBack: number[] = [];
      try {
        for await (const m of client.streamChat(userRequest("sim", `#sim tokens=${TOKENS} token_chars=${TOKEN_CHARS} tag=${tag}`), { signal: abort.signal })) {
          if (m.delta.case === "text") delivered += Buffer.byteLength(m.delta.value.text);
          if (++reads === 30) abort.abort();
          await delay(100); // the behaviour under test: one message per 100 ms
          peak = Math.max(peak, await held(gw.url));
          const record = sim.records.all().find((r) => r.tag === tag);
          if (record) heldBack.push(record.bytesWritten - delivered);
        }
      } catch {
        // our own abort
      }
      const record = await sim.records.waitFor((r) => r.tag === tag && r.endedAt !== undefined, 30_000);
      const growth = peak - baseline;
      const ahead = Math.max(...heldBack);
      console.log(
        `${transport}: delivered ${(delivered / MiB).toFixed(2)} MiB in ${reads} reads; upstream wrote ${(record.bytesWritten / MiB).toFixed(2)} MiB ` +
          `of ${((TOKENS * TOKEN_CHARS) / MiB).toFixed(1)} MiB; upstream ahead of client by at most ${(ahead / MiB).toFixed(2)} MiB; ` +
          `gateway held ${(growth / MiB).toFixed(1)} MiB more at most (RSS ${((gw.rss() - rssBefore) / MiB).toFixed(1)} MiB)`,
      );
      expect(record.outcome).toBe("client_closed");
      // The simulator was held back: it wrote well under what it could have
      // (what it did write sits in kernel socket buffers, a few MiB per hop).
      expect(record.bytesWritten).toBeLessThan((TOKENS * TOKEN_CHARS) / 2);
      // What upstream wrote beyond what the client took is what two TCP hops
      // of kernel buffers hold, plus a message or two: nothing piles up in the gateway.
      expect(ahead).toBeLessThan(2 * SOCKET_BUFFERS + MiB);
      // The distance does not keep growing: the last sample is no further ahead
      // than the furthest of the first half plus slack. The buffers fill in the
      // first reads (within two here, unloaded or not); comparing with the
      // fifth sample alone would have called a loaded machine that filled them
      // later a leak, so it gets the whole first half (15 reads, 1.5 s or more).
      expect(heldBack.at(-1)!).toBeLessThan(Math.max(...heldBack.slice(0, heldBack.length / 2)) + 4 * MiB);
      expect(growth).toBeLessThan(16 * MiB);
    });
  }
});
