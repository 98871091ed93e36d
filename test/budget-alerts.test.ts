import { createHmac } from "node:crypto";
import { once } from "node:events";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { alertBody, signature } from "../src/tenancy/alert-webhook.js";
import { crossed } from "../src/tenancy/budget-alerts.js";
import { type Harness, startHarness } from "./helpers/harness.js";
import { tenancyEvents } from "./helpers/tenancy-events.js";

const SECRET = "whsec-test-0123456789abcdef";
const KEY = "sk-test-alerts-4f6a8c0e2b1d3957";
const PRICE = { inputPerMTok: 1_000, outputPerMTok: 2_000 };

describe("thresholds and signatures", () => {
  it("a call crosses the thresholds its cost moved the spend over, each exactly at its line", () => {
    expect(crossed([0.5, 0.8, 1], 1_000, 400, 500)).toEqual([0.5]);
    expect(crossed([0.5, 0.8, 1], 1_000, 499, 1_000)).toEqual([0.5, 0.8, 1]);
    expect(crossed([0.5, 0.8, 1], 1_000, 500, 700)).toEqual([]);
  });

  it("signs the time with the body, so a receiver can refuse forgeries and replays", () => {
    const body = alertBody({
      id: "a:m2026-12:500",
      level: "team",
      name: "crew",
      levelId: "crew-1",
      threshold: 0.5,
      period: "month",
      periodId: "m2026-12",
      periodStart: 0,
      periodEnd: 1,
      budgetMicros: 2_000_000,
      spentMicros: 1_000_001,
      at: 0,
    });
    expect(JSON.parse(body)).toMatchObject({ type: "budget.threshold", level: "team", name: "crew", levelId: "crew-1", budgetUsd: "2", spentUsd: "1.000001" });
    const header = signature(SECRET, body, 1_700_000_000);
    expect(header).toBe(`t=1700000000,v1=${createHmac("sha256", SECRET).update(`1700000000.${body}`).digest("hex")}`);
    expect(signature(SECRET, `${body} `, 1_700_000_000)).not.toBe(header);
  });
});

interface Delivery {
  readonly headers: Record<string, string | string[] | undefined>;
  readonly body: string;
}

describe("budget alerts over the wire", () => {
  let receiver: Server;
  const deliveries: Delivery[] = [];
  let answered = 0;
  let h: Harness;
  const events = tenancyEvents();

  beforeAll(async () => {
    // The receiver fails its first delivery: the gateway must try again.
    receiver = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on("data", (c: Buffer) => chunks.push(c));
      req.on("end", () => {
        answered++;
        if (answered === 1) {
          res.writeHead(503).end();
          return;
        }
        deliveries.push({ headers: req.headers, body: Buffer.concat(chunks).toString("utf8") });
        res.writeHead(204).end();
        receiver.emit("delivered");
      });
    });
    receiver.listen(0, "127.0.0.1");
    await once(receiver, "listening");
    const url = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hooks/sluice`;
    h = await startHarness({
      routing: (sim) => ({
        providers: { simulator: { kind: "openai", baseUrl: sim.openAiBaseUrl, breaker: { failures: 10_000 } } },
        models: { sim: { provider: "simulator", model: "sim-1?tokens=4", price: PRICE } },
      }),
      env: { KEY, SECRET },
      auth: { keys: [{ name: "spender", keyEnv: "KEY", team: "crew", budget: { usd: 0.05, period: "month" } }], teams: [{ name: "crew", budget: { usd: 0.06, period: "month" } }] },
      alerts: { thresholds: [0.5, 0.8, 1], webhook: { url, secretEnv: "SECRET" } },
      observer: events.observer,
    });
  });
  afterAll(async () => {
    await h.close();
    receiver.close();
  });

  const chat = async () => {
    const res = await fetch(`${h.url}/v1/chat/completions`, {
      method: "POST",
      headers: { "content-type": "application/json", authorization: `Bearer ${KEY}` },
      body: JSON.stringify({ model: "sim", max_tokens: 5, messages: [{ role: "user", content: "hi" }] }),
    });
    await res.arrayBuffer();
    return { status: res.status, id: res.headers.get("x-request-id")! };
  };

  const waitForDeliveries = async (count: number) => {
    while (deliveries.length < count) await once(receiver, "delivered");
  };

  it("announces each threshold of the key and its team once per period, signed, retried until the receiver takes it", async () => {
    let spent = 0;
    for (let i = 0; i < 40; i++) {
      const r = await chat();
      if (r.status !== 200) {
        expect(r.status).toBe(402);
        break;
      }
      spent += (await events.recorded(r.id)).costMicros;
    }
    // The key: 50 % and 80 % by spend, 100 % when its budget refused a request. The team: what the same spend crossed of its own budget.
    const keyThresholds = [...crossed([0.5, 0.8], 50_000, 0, spent), 1];
    const teamThresholds = crossed([0.5, 0.8, 1], 60_000, 0, spent);
    await waitForDeliveries(keyThresholds.length + teamThresholds.length);

    const bodies = deliveries.map((d) => JSON.parse(d.body) as { id: string; level: string; name: string; threshold: number });
    expect(
      bodies
        .filter((b) => b.level === "key")
        .map((b) => b.threshold)
        .sort(),
    ).toEqual(keyThresholds.sort());
    expect(
      bodies
        .filter((b) => b.level === "team")
        .map((b) => b.threshold)
        .sort(),
    ).toEqual(teamThresholds.sort());
    expect(bodies.filter((b) => b.level === "key").every((b) => b.name === "spender")).toBe(true);
    for (const d of deliveries) {
      const header = String(d.headers["sluice-signature"]);
      const t = Number(/^t=(\d+),/.exec(header)?.[1]);
      expect(header).toBe(signature(SECRET, d.body, t));
      expect(d.headers["sluice-event-id"]).toBe((JSON.parse(d.body) as { id: string }).id);
    }
    // The receiver's 503 was retried: one more answer than deliveries.
    expect(answered).toBe(deliveries.length + 1);
    expect(h.logs().filter((l) => l.event === "alert.retrying")).toHaveLength(1);

    // Refused again: the 100 % alert was announced already this period.
    expect((await chat()).status).toBe(402);
    expect(h.logs().filter((l) => l.event === "budget.alert" && l.level === "key" && l.threshold === 1)).toHaveLength(1);
    expect(h.logs().filter((l) => l.event === "budget.alert")).toHaveLength(deliveries.length);
    // The secret never reaches a log line.
    expect(JSON.stringify(h.logs())).not.toContain(SECRET);
  });
});
