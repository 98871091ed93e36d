import { createClient } from "@connectrpc/connect";
import { createConnectTransport } from "@connectrpc/connect-node";
import OpenAI, { toFile } from "openai";
import type { Browser, BrowserContext, Page } from "playwright-core";
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { ChatService } from "../gen/sluice/v1/chat_service_pb.js";
import { simulatedText } from "../src/simulator/text.js";
import { collectErrors, launchChromium, screenshot } from "./helpers/browser.js";
import { collect, userRequest } from "./helpers/clients.js";
import { FAR_TIMEOUTS, type Harness, startHarness } from "./helpers/harness.js";
import { type OwnDatabase, ownDatabase } from "./helpers/postgres.js";
import { tenancyEvents } from "./helpers/tenancy-events.js";

/**
 * The console in Debian's Chromium against a real gateway and simulator.
 * Every wait is Playwright's auto-waiting on what the page shows, or the
 * simulator's records; nothing sleeps. The live view runs on the real
 * clock (a snapshot a second), so its waits are for a value to appear.
 */
const TOKENS = 12;

let browser: Browser;
beforeAll(async () => {
  browser = await launchChromium();
});
afterAll(() => browser?.close());

/** A fresh tab per test, its errors collected. */
function useTab() {
  const tab = { context: undefined as unknown as BrowserContext, page: undefined as unknown as Page, errors: [] as string[] };
  beforeEach(async () => {
    tab.context = await browser.newContext({ viewport: { width: 1200, height: 900 } });
    tab.page = await tab.context.newPage();
    tab.page.setDefaultTimeout(30_000);
    tab.errors = collectErrors(tab.page);
  });
  afterEach(() => tab.context?.close());
  return tab;
}

/** How far a chart's drawing (its legend included) runs past the right edge of its card's content box, in CSS px. */
async function overflowOf(page: Page, testid: string): Promise<number> {
  return page.getByTestId(testid).evaluate((card) => {
    const style = card.ownerDocument.defaultView!.getComputedStyle(card);
    const contentRight = card.getBoundingClientRect().right - Number.parseFloat(style.paddingRight) - Number.parseFloat(style.borderRightWidth);
    const drawn = [...card.querySelectorAll(".uplot, .u-legend")].map((e) => e.getBoundingClientRect().right);
    return Math.max(0, ...drawn.map((right) => right - contentRight));
  });
}

describe("console, open", () => {
  let h: Harness;
  const tab = useTab();
  beforeAll(async () => {
    h = await startHarness({ models: { demo: `sim-1?tokens=${TOKENS}&delay_ms=5` }, provider: { timeouts: FAR_TIMEOUTS }, console: { access: "open" } });
  });
  afterAll(() => h.close());

  it("loads with no console errors, and the live feed is live", async () => {
    const { page } = tab;
    await page.goto(`${h.url}/console/`);
    await page.getByTestId("feed-status").filter({ hasText: "live" }).waitFor();
    await page.getByTestId("active-streams").waitFor();
    await page.goto(`${h.url}/console/#playground`);
    await page.getByTestId("alias").locator("option", { hasText: "demo" }).waitFor({ state: "attached" });
    expect(tab.errors).toEqual([]);
  });

  it("streams the demo alias in the playground: start's target, the text, then usage and finish", async () => {
    const { page } = tab;
    await page.goto(`${h.url}/console/#playground`);
    await page.getByTestId("alias").locator("option", { hasText: "demo" }).waitFor({ state: "attached" });
    // The picker names aliases; the target an alias resolves to is not an alias's name.
    expect(await page.getByTestId("alias").locator("option").allTextContents()).toEqual(["demo"]);
    await page.getByTestId("send").click();
    await page.getByTestId("finish").filter({ hasText: "stop" }).waitFor();
    expect(await page.getByTestId("run-alias").textContent()).toBe("demo");
    expect(await page.getByTestId("answer").textContent()).toBe(simulatedText(1, TOKENS));
    expect(await page.getByTestId("usage").textContent()).toContain(`out ${TOKENS}`);
    expect(await page.getByTestId("target").textContent()).toBe(`simulator / sim-1?tokens=${TOKENS}&delay_ms=5`);
    expect(await page.getByTestId("run-status").textContent()).toBe("finished");
    expect(await page.getByTestId("ttft").textContent()).toMatch(/\d ms|\d s/);
    // Every delta kind in the order it came: start first, usage then finish last.
    const kinds = await page.locator("[data-testid=events] .kind").allTextContents();
    expect(kinds[0]).toBe("start");
    expect(kinds.slice(-2)).toEqual(["usage", "finish"]);
    // Text deltas that reach the gateway together leave as one message (docs/streams.md, "Natural batching"):
    // how many there are depends on timing, what they say together does not.
    const texts = await page.locator("[data-testid=events] li:has(.kind.text)").allTextContents();
    expect(texts.length).toBeGreaterThan(0);
    expect(texts.map((line) => JSON.parse(line.replace(/^text /, "")) as string).join("")).toBe(simulatedText(1, TOKENS));
    // The same request, to run elsewhere.
    expect(await page.getByTestId("snippet-buf-curl").textContent()).toContain(`${h.url}/sluice.v1.ChatService/StreamChat`);
    expect(await page.getByTestId("snippet-curl").textContent()).toContain(`"model":"demo"`);
    await screenshot(page, "playground");
    expect(tab.errors).toEqual([]);
  });

  it("without an admin key, Spend and Batches say what to configure, not that a method is not implemented", async () => {
    const { page } = tab;
    await page.goto(`${h.url}/console/#spend`);
    const spend = await page.getByTestId("spend-problem").textContent();
    expect(spend).toContain("set auth.adminKeyEnv");
    expect(spend).toContain("store.postgres");
    expect(spend).not.toContain("not implemented");
    await screenshot(page, "spend-no-admin-key");
    await page.goto(`${h.url}/console/#batches`);
    const batches = await page.getByTestId("batches-problem").textContent();
    expect(batches).toContain("set auth.adminKeyEnv");
    expect(batches).not.toContain("not implemented");
    // The browser logs each refused call's status (501) as an error of its own; nothing else may show.
    expect(tab.errors.filter((e) => !e.startsWith("Failed to load resource"))).toEqual([]);
  });

  it("names each circuit breaker by the aliases routing to it, the upstream model string beside it; the chart stays in its card", async () => {
    const { page } = tab;
    const chat = createClient(ChatService, createConnectTransport({ baseUrl: h.url, httpVersion: "1.1" }));
    await collect(chat.streamChat(userRequest("demo", "Hello")));
    await page.goto(`${h.url}/console/#live`);
    const target = `simulator/sim-1?tokens=${TOKENS}&delay_ms=5`;
    await page
      .getByTestId(`breaker-${target}-aliases`)
      .filter({ hasText: /^demo$/ })
      .waitFor();
    expect(await page.getByTestId(`breaker-${target}`).textContent()).toBe(`demo${target}closed`);
    await page.getByTestId("ttft-chart").locator(".u-legend").waitFor();
    expect(await overflowOf(page, "ttft-chart")).toBeLessThan(1); // sub-pixel rounding; it was 13 px (the card's padding)
    await screenshot(page, "live-breakers");
  });

  it("Stop cancels the RPC, and the simulator sees its request closed", async () => {
    const { page } = tab;
    await page.goto(`${h.url}/console/#playground`);
    await page.getByTestId("alias").locator("option", { hasText: "demo" }).waitFor({ state: "attached" });
    await page.getByTestId("message-0").fill("#sim tokens=500 hold_at=3 tag=console-stop");
    await page.getByTestId("send").click();
    // The upstream has written three tokens and holds: only a cancel can end it now.
    await h.sim.records.waitFor((r) => r.tag === "console-stop" && r.heldAt !== undefined, 30_000);
    await page
      .getByTestId("answer")
      .filter({ hasText: simulatedText(1, 3) })
      .waitFor();
    await page.getByTestId("stop").click();
    const record = await h.sim.records.waitFor((r) => r.tag === "console-stop" && r.clientClosedAt !== undefined, 30_000);
    expect(record.outcome).toBe("client_closed");
    expect(record.tokensWritten).toBe(3);
    await page.getByTestId("run-status").filter({ hasText: "stopped" }).waitFor();
    expect(await page.getByTestId("finish").textContent()).toBe("–");
  });
});

describe("console live view", () => {
  let h: Harness;
  const tab = useTab();
  beforeAll(async () => {
    h = await startHarness({ models: { demo: `sim-1?tokens=${TOKENS}` }, provider: { timeouts: FAR_TIMEOUTS }, console: { access: "open" } });
  });
  afterAll(() => h.close());

  it("shows a stream from another client in the active count while it runs, then in the outcome counts", async () => {
    const { page } = tab;
    await page.goto(`${h.url}/console/`);
    const active = page.getByTestId("active-streams");
    await active.filter({ hasText: /^0$/ }).waitFor();
    const chat = createClient(ChatService, createConnectTransport({ baseUrl: h.url, httpVersion: "1.1" }));
    const done = collect(chat.streamChat(userRequest("demo", "#sim hold_at=4 tag=console-live")));
    await h.sim.records.waitFor((r) => r.tag === "console-live" && r.heldAt !== undefined, 30_000);
    await active.filter({ hasText: /^1$/ }).waitFor();
    await screenshot(page, "live-streaming");
    h.sim.records.release("console-live");
    expect((await done).at(-1)?.delta.case).toBe("finish");
    await page.getByTestId("outcome-ok-total").filter({ hasText: /^1$/ }).waitFor();
    await active.filter({ hasText: /^0$/ }).waitFor();
    await screenshot(page, "live");
    expect(tab.errors).toEqual([]);
  });
});

describe("console behind the admin key", () => {
  const ADMIN_KEY = "console-admin-key-for-browser-tests";
  const TENANT_KEY = "tenant-key-for-the-admin-console-tests";
  let h: Harness;
  const tab = useTab();
  beforeAll(async () => {
    h = await startHarness({
      models: { demo: `sim-1?tokens=${TOKENS}`, other: "sim-1?tokens=2" },
      provider: { timeouts: FAR_TIMEOUTS },
      env: { SLUICE_ADMIN_KEY: ADMIN_KEY, CONSOLE_TENANT_KEY: TENANT_KEY },
      auth: { adminKeyEnv: "SLUICE_ADMIN_KEY", keys: [{ name: "team", keyEnv: "CONSOLE_TENANT_KEY", models: ["demo"] }] },
    });
  });
  afterAll(() => h.close());

  it("asks for the admin key, refuses a wrong one, and opens with the right one", async () => {
    const { page } = tab;
    await page.goto(`${h.url}/console/`);
    const input = page.getByTestId("admin-key");
    await input.waitFor();
    await screenshot(page, "admin-key");
    await input.fill("a-wrong-admin-key");
    await input.press("Enter");
    await page.getByTestId("key-refused").waitFor();
    // Refused: still locked, nothing of the live view shown.
    expect(await page.getByTestId("active-streams").count()).toBe(0);
    await page.getByTestId("admin-key").fill(ADMIN_KEY);
    await page.getByTestId("admin-key").press("Enter");
    await page.getByTestId("active-streams").waitFor();
    await page.getByTestId("feed-status").filter({ hasText: "live" }).waitFor();
    // The key stays in this tab's session storage, nowhere more lasting, and never in the gateway's logs.
    // (Expressions as text: they run in the page, whose globals this file's Node types do not know.)
    expect(await page.evaluate("Object.keys(window.localStorage)")).toEqual([]);
    expect(await page.evaluate('window.sessionStorage.getItem("sluice.adminKey")')).toBe(ADMIN_KEY);
    expect(h.logText()).not.toContain(ADMIN_KEY);
    expect(h.logText()).not.toContain("a-wrong-admin-key");
  });

  it("signed in as admin on a gateway with virtual keys, the playground lists every alias, and streams with a virtual key", async () => {
    const { page } = tab;
    await page.goto(`${h.url}/console/#playground`);
    await page.getByTestId("admin-key").fill(ADMIN_KEY);
    await page.getByTestId("admin-key").press("Enter");
    const options = page.getByTestId("alias").locator("option");
    await options.filter({ hasText: "other" }).waitFor({ state: "attached" });
    expect(await options.evaluateAll((all) => all.map((o) => (o as unknown as { value: string }).value))).toEqual(["demo", "other"]);
    expect(await page.getByTestId("models-error").count()).toBe(0);
    // Chat needs a virtual key: given one, the picker narrows to what that key may use, and the alias streams.
    await page.getByTestId("api-key").fill(TENANT_KEY);
    await page.getByTestId("api-key").press("Tab");
    await options.filter({ hasText: "other" }).waitFor({ state: "detached" });
    await page.getByTestId("send").click();
    await page.getByTestId("finish").filter({ hasText: "stop" }).waitFor();
    expect(await page.getByTestId("answer").textContent()).toBe(simulatedText(1, TOKENS));
    expect(h.logText()).not.toContain(TENANT_KEY);
    expect(tab.errors).toEqual([]);
  });
});

describe("console keys table", () => {
  const TENANT_KEY = "tenant-key-for-console-browser-tests";
  let h: Harness;
  const tab = useTab();
  beforeAll(async () => {
    h = await startHarness({
      models: { demo: `sim-1?tokens=${TOKENS}` },
      provider: { timeouts: FAR_TIMEOUTS },
      env: { CONSOLE_TENANT_KEY: TENANT_KEY },
      auth: { keys: [{ name: "team", keyEnv: "CONSOLE_TENANT_KEY", limits: { requestsPerMinute: 10, concurrentStreams: 3 } }] },
      console: { access: "open" },
      // The store's minute window stands still: however slow the machine, the admission stays in it.
      storeClock: () => Date.UTC(2026, 0, 1),
    });
  });
  afterAll(() => h.close());

  it("shows what is left this minute and the streams in use against the limit while a key's stream runs", async () => {
    const { page } = tab;
    await page.goto(`${h.url}/console/`);
    const streams = page.getByTestId("key-team-streams");
    await streams.filter({ hasText: "0 / 3" }).waitFor();
    expect(await page.getByTestId("key-team-left").textContent()).toBe("10 of 10, no limit");
    const chat = createClient(ChatService, createConnectTransport({ baseUrl: h.url, httpVersion: "1.1" }));
    const done = collect(chat.streamChat(userRequest("demo", "#sim hold_at=2 tag=console-keys"), { headers: { authorization: `Bearer ${TENANT_KEY}` } }));
    await h.sim.records.waitFor((r) => r.tag === "console-keys" && r.heldAt !== undefined, 30_000);
    await streams.filter({ hasText: "1 / 3" }).waitFor();
    expect(await page.getByTestId("key-team-left").textContent()).toBe("9 of 10, no limit");
    await screenshot(page, "live-keys");
    h.sim.records.release("console-keys");
    expect((await done).at(-1)?.delta.case).toBe("finish");
    await streams.filter({ hasText: "0 / 3" }).waitFor();
    expect(tab.errors).toEqual([]);
  });
});

describe("console cache table", () => {
  /** A thousand dollars per million tokens each way: one token costs a tenth of a cent, which the table's four decimals show. */
  const PRICE = { inputPerMTok: 1_000, outputPerMTok: 1_000 };
  let h: Harness;
  const tab = useTab();
  beforeAll(async () => {
    h = await startHarness({
      routing: (sim) => ({
        providers: { sim: { kind: "openai", baseUrl: sim.openAiBaseUrl } },
        models: { faq: { provider: "sim", model: `sim-1?tokens=${TOKENS}`, price: PRICE, cache: { exact: { ttlS: 600 } } } },
      }),
      provider: { timeouts: FAR_TIMEOUTS },
      console: { access: "open" },
    });
  });
  afterAll(() => h.close());

  it("shows an alias's hit rate and what its hits saved", async () => {
    const { page } = tab;
    await page.goto(`${h.url}/console/`);
    await page.getByTestId("cache-faq-rate").filter({ hasText: "–" }).waitFor();
    const chat = createClient(ChatService, createConnectTransport({ baseUrl: h.url, httpVersion: "1.1" }));
    const ask = () => collect(chat.streamChat(userRequest("faq", "What is the capital of France?")));
    const first = await ask();
    const usage = first.find((m) => m.delta.case === "usage")!.delta.value as { inputTokens: bigint; outputTokens: bigint };
    await h.waitForLog((l) => l.event === "cache.stored", 30_000);
    const second = await ask();
    expect(second[0]!.delta).toMatchObject({ case: "start", value: { cache: 1 } });
    const savedMicros = Number(usage.inputTokens + usage.outputTokens) * 1_000;
    await page.getByTestId("cache-faq-rate").filter({ hasText: "50 %" }).waitFor();
    expect(await page.getByTestId("cache-faq-hits").textContent()).toBe("1 (0)");
    expect(await page.getByTestId("cache-faq-saved").textContent()).toBe(`$${(savedMicros / 1e6).toFixed(4)}`);
    await screenshot(page, "live-cache");
    expect(tab.errors).toEqual([]);
  });
});

describe("console spend page", () => {
  const ADMIN_KEY = "console-admin-key-for-the-spend-page";
  const KEYS = { search: "tenant-key-of-the-search-team-0001", ads: "tenant-key-of-the-ads-team-00000002" };
  /** A thousand dollars per million tokens each way: a token costs a tenth of a cent, which four decimals show. */
  const PRICE = { inputPerMTok: 1_000, outputPerMTok: 1_000 };
  let h: Harness;
  const events = tenancyEvents();
  const tab = useTab();
  beforeAll(async () => {
    h = await startHarness({
      observer: events.observer,
      routing: (sim) => ({
        providers: { sim: { kind: "openai", baseUrl: sim.openAiBaseUrl } },
        models: { demo: { provider: "sim", model: `sim-1?tokens=${TOKENS}`, price: PRICE } },
      }),
      provider: { timeouts: FAR_TIMEOUTS },
      env: { SLUICE_ADMIN_KEY: ADMIN_KEY, SEARCH_KEY: KEYS.search, ADS_KEY: KEYS.ads },
      auth: {
        adminKeyEnv: "SLUICE_ADMIN_KEY",
        keys: [
          { name: "search-api", keyEnv: "SEARCH_KEY", team: "search" },
          { name: "ads-api", keyEnv: "ADS_KEY", team: "ads", budget: { usd: 5, period: "day" } },
        ],
        teams: [
          { name: "search", businessLine: "consumer", budget: { usd: 5, period: "month" } },
          { name: "ads", businessLine: "revenue" },
        ],
        businessLines: [{ name: "consumer" }, { name: "revenue" }],
      },
      // The embedded database, in memory: the ledger is on because store.postgres is configured.
      store: { postgres: {} },
    });
  }, 120_000);
  afterAll(() => h.close());

  it("shows spend stacked by team or business line, the top keys and aliases, and each budget's gauge", async () => {
    const chat = createClient(ChatService, createConnectTransport({ baseUrl: h.url, httpVersion: "1.1" }));
    const spend = { search: 0, ads: 0 };
    for (const [team, key, times] of [
      ["search", KEYS.search, 3],
      ["ads", KEYS.ads, 1],
    ] as const) {
      for (let i = 0; i < times; i++) {
        const messages = await collect(chat.streamChat(userRequest("demo", "What does the ledger say?"), { headers: { authorization: `Bearer ${key}` } }));
        const usage = messages.find((m) => m.delta.case === "usage")!.delta.value as { inputTokens: bigint; outputTokens: bigint };
        spend[team] += Number(usage.inputTokens + usage.outputTokens) * 1_000;
      }
    }
    await h.sluice.ledger!.flush();

    const { page } = tab;
    await page.goto(`${h.url}/console/#spend`);
    await page.getByTestId("admin-key").fill(ADMIN_KEY);
    await page.getByTestId("admin-key").press("Enter");
    await page
      .getByTestId("top-keys-search-api")
      .filter({ hasText: `$${(spend.search / 1e6).toFixed(4)}` })
      .waitFor();
    expect(await page.getByTestId("top-keys-ads-api").textContent()).toBe(`$${(spend.ads / 1e6).toFixed(4)}`);
    expect(await page.getByTestId("top-aliases-demo").textContent()).toBe(`$${((spend.search + spend.ads) / 1e6).toFixed(4)}`);
    expect(await page.getByTestId("spend-requests").textContent()).toBe("4");
    // Budgets: the team's month and the key's day, with what each period spent.
    expect(await page.getByTestId("gauge-team-search-figures").textContent()).toBe(`$${(spend.search / 1e6).toFixed(4)} of $5.0000 this month (${Math.round((spend.search / 5_000_000) * 100)} %)`);
    expect(await page.getByTestId("gauge-key-ads-api-figures").textContent()).toContain("this day");
    expect(await page.getByTestId("budget-gauges").locator(".gauge-mark").count()).toBe(3 * 2);
    // The chart's legend names the teams, then the business lines once the stacking changes.
    await page.getByTestId("spend-chart").locator(".u-legend", { hasText: "search" }).waitFor();
    await page.getByTestId("spend-grouping").selectOption("business_line");
    await page.getByTestId("spend-chart").locator(".u-legend", { hasText: "consumer" }).waitFor();
    expect(await page.getByTestId("spend-chart").locator(".u-legend").textContent()).toContain("revenue");
    // The chart and its legend stay inside the card; the buckets are UTC hours, written as every page writes time.
    expect(await overflowOf(page, "spend-chart")).toBeLessThan(1);
    await page.getByTestId("spend-chart").locator(".u-over").hover();
    expect(await page.getByTestId("spend-chart").locator(".u-legend .u-series").first().locator(".u-value").textContent()).toMatch(/^\d{4}-\d{2}-\d{2} \d{2}:00 UTC$/);
    await screenshot(page, "spend");
    expect(tab.errors).toEqual([]);
  }, 120_000);

  it("shows what MCP tool calls spent, by tool with its server, apart from the models' aliases", async () => {
    // Tool calls charged through the gateway's own tool accounting (what the MCP toolbox settles with), as the search key.
    const principal = await h.sluice.tenancy.identify(`Bearer ${KEYS.search}`, "mcp");
    const calls = [
      { server: "files", tool: "files_read", upstreamTool: "read", priceUsd: 0.25, callId: "console-tool-1" },
      { server: "files", tool: "files_read", upstreamTool: "read", priceUsd: 0.25, callId: "console-tool-2" },
      { server: "search", tool: "search_web", upstreamTool: "web", priceUsd: 0.5, callId: "console-tool-3" },
    ];
    for (const call of calls) {
      const charge = await h.sluice.toolAccounting.admit({ ...(principal ? { principal } : {}) }, { ...call, argumentsSha256: "0".repeat(64), via: "mcp" }, new AbortController().signal);
      charge.settle({ outcome: "ok", durationMs: 5, resultBytes: 10 });
    }
    for (const call of calls) await events.recorded(call.callId);
    await h.sluice.ledger!.flush();

    const { page } = tab;
    await page.goto(`${h.url}/console/#spend`);
    await page.getByTestId("admin-key").fill(ADMIN_KEY);
    await page.getByTestId("admin-key").press("Enter");
    await page.getByTestId("top-tools-files_read").filter({ hasText: "$0.5000" }).waitFor();
    expect(await page.getByTestId("top-tools-search_web").textContent()).toBe("$0.5000");
    expect(await page.getByTestId("spend-tools").textContent()).toBe("$1.0000");
    expect(await page.getByTestId("top-tools").locator("tr", { hasText: "files_read" }).textContent()).toContain("files");
    // The models' aliases table shows models only: no tool is an alias there.
    expect(await page.getByTestId("top-aliases").textContent()).not.toContain("files_read");
    await screenshot(page, "spend-tools");
    expect(tab.errors).toEqual([]);
  }, 120_000);
});

describe("console batches page", () => {
  const ADMIN_KEY = "console-admin-key-for-the-batches-page";
  const KEY = "tenant-key-that-runs-the-nightly-batch";
  let h: Harness;
  let database: OwnDatabase;
  const tab = useTab();
  beforeAll(async () => {
    database = await ownDatabase();
    h = await startHarness({
      models: { demo: "sim-1?tokens=2" },
      provider: { timeouts: FAR_TIMEOUTS },
      env: { SLUICE_ADMIN_KEY: ADMIN_KEY, NIGHTLY_KEY: KEY },
      auth: { adminKeyEnv: "SLUICE_ADMIN_KEY", keys: [{ name: "nightly", keyEnv: "NIGHTLY_KEY" }] },
      store: { postgres: { url: database.url, poolSize: 2 } },
      batch: { concurrency: 1 },
    });
  }, 120_000);
  afterAll(async () => {
    await h?.close();
    await database?.drop();
  });

  it("lists every key's batches with their progress, and follows a batch to its end", async () => {
    const sdk = new OpenAI({ baseURL: `${h.url}/v1`, apiKey: KEY, maxRetries: 0 });
    // Two lines answer at once; the third holds mid-stream until the test lets it go.
    const lines = ["a", "b", "c"].map((id, i) =>
      JSON.stringify({ custom_id: id, method: "POST", url: "/v1/chat/completions", body: { model: "demo", messages: [{ role: "user", content: `#sim ${i === 2 ? "hold_at=1 tag=console-held" : "tokens=2"}\nline ${id}` }] } }),
    );
    const file = await sdk.files.create({ file: await toFile(Buffer.from(lines.join("\n")), "nightly.jsonl"), purpose: "batch" });
    const batch = await sdk.batches.create({ input_file_id: file.id, endpoint: "/v1/chat/completions", completion_window: "24h" });
    await h.sim.records.waitFor((r) => r.tag === "console-held" && r.heldAt !== undefined, 30_000);

    const { page } = tab;
    await page.goto(`${h.url}/console/#batches`);
    await page.getByTestId("admin-key").fill(ADMIN_KEY);
    await page.getByTestId("admin-key").press("Enter");
    await page.getByTestId(`batch-counts-${batch.id}`).filter({ hasText: "2 / 3" }).waitFor();
    expect(await page.getByTestId(`batch-status-${batch.id}`).textContent()).toBe("in progress");
    expect(await page.getByTestId(`batch-${batch.id}`).textContent()).toContain("nightly");
    expect(await page.getByTestId(`batch-created-${batch.id}`).textContent()).toMatch(/^\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2} UTC$/);
    await screenshot(page, "batches");

    h.sim.records.release("console-held");
    await h.sluice.batches.settled(batch.id);
    // The page reads the list again by itself.
    await page.getByTestId(`batch-status-${batch.id}`).filter({ hasText: "completed" }).waitFor();
    expect(await page.getByTestId(`batch-counts-${batch.id}`).textContent()).toBe("3 / 3");
    expect(tab.errors).toEqual([]);
  }, 120_000);
});
