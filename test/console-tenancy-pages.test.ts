import type { Browser, BrowserContext, Page } from "playwright-core";
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { Period } from "../gen/sluice/admin/v1/admin_service_pb.js";
import { type AdminClient, adminClient } from "./helpers/admin.js";
import { collectErrors, launchChromium, screenshot } from "./helpers/browser.js";
import { FAR_TIMEOUTS, type Harness, startHarness } from "./helpers/harness.js";

/**
 * The console's Keys, Teams and Business lines pages in Debian's Chromium,
 * against a real gateway (memory tenant store) and simulator: what the
 * pages create and change is read back through the admin API, and a key's
 * fate is checked where it matters, on an edge. Every wait is Playwright's
 * auto-waiting on what the page shows.
 */
const ADMIN_KEY = "console-admin-key-for-the-tenancy-pages";
const OPS_KEY = "tenant-key-of-the-configured-ops-key";

let browser: Browser;
beforeAll(async () => {
  browser = await launchChromium();
});
afterAll(() => browser?.close());

/** A fresh tab per test (clipboard allowed, so Copy can be checked), its errors collected. */
function useTab() {
  const tab = { context: undefined as unknown as BrowserContext, page: undefined as unknown as Page, errors: [] as string[] };
  beforeEach(async () => {
    tab.context = await browser.newContext({ viewport: { width: 1400, height: 900 }, permissions: ["clipboard-read", "clipboard-write"] });
    tab.page = await tab.context.newPage();
    tab.page.setDefaultTimeout(30_000);
    tab.errors = collectErrors(tab.page);
  });
  afterEach(() => tab.context?.close());
  return tab;
}

/** One chat completion on the OpenAI facade with `key`: the status an edge gives that key. */
async function chatStatus(h: Harness, key: string): Promise<number> {
  const response = await fetch(`${h.url}/v1/chat/completions`, {
    method: "POST",
    headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
    body: JSON.stringify({ model: "demo", messages: [{ role: "user", content: "Hello" }] }),
  });
  await response.arrayBuffer();
  return response.status;
}

async function open(page: Page, h: Harness, hash: string): Promise<void> {
  await page.goto(`${h.url}/console/#${hash}`);
  await page.getByTestId("admin-key").fill(ADMIN_KEY);
  await page.getByTestId("admin-key").press("Enter");
}

/** Every value the page keeps in either storage, and its address: where a secret must never be. */
async function kept(page: Page): Promise<string> {
  const storage = await page.evaluate("JSON.stringify([Object.entries(window.localStorage), Object.entries(window.sessionStorage)])");
  return `${String(storage)} ${page.url()}`;
}

describe("console tenancy pages", () => {
  let h: Harness;
  let admin: AdminClient;
  const tab = useTab();
  beforeAll(async () => {
    h = await startHarness({
      models: { demo: "sim-1?tokens=2" },
      provider: { timeouts: FAR_TIMEOUTS },
      env: { SLUICE_ADMIN_KEY: ADMIN_KEY, OPS_KEY },
      auth: { adminKeyEnv: "SLUICE_ADMIN_KEY", keys: [{ name: "ops", keyEnv: "OPS_KEY", limits: { requestsPerMinute: 600 } }] },
    });
    admin = adminClient(h.url, ADMIN_KEY);
  }, 120_000);
  afterAll(() => h?.close());

  it("creates a business line, a team in it and a key in that team; the key's secret shows once, works, and is kept nowhere", async () => {
    const { page } = tab;
    await open(page, h, "business-lines");
    await page.getByTestId("lines-empty").waitFor();

    // Obvious mistakes are named beside their field, and nothing is sent.
    await page.getByTestId("new-line-name").fill("bad name!");
    await page.getByTestId("new-line-usd").fill("ten");
    await page.getByTestId("new-line-submit").click();
    expect(await page.getByTestId("new-line-name-problem").textContent()).toContain("letters, digits");
    expect(await page.getByTestId("new-line-usd-problem").textContent()).toContain("US dollars");
    expect(await page.getByTestId("new-line-usd").getAttribute("aria-invalid")).toBe("true");
    expect((await admin.listBusinessLines({})).businessLines).toEqual([]);

    await page.getByTestId("new-line-name").fill("consumer");
    await page.getByTestId("new-line-usd").fill("100");
    await page.getByTestId("new-line-submit").click();
    await page.getByTestId("line-consumer-budget").filter({ hasText: "$100.0000 / month" }).waitFor();
    expect(await page.getByTestId("new-line-name-problem").count()).toBe(0);

    await page.goto(`${h.url}/console/#teams`);
    await page.getByTestId("teams-empty").waitFor();
    await page.getByTestId("new-team-name").fill("search");
    await page.getByTestId("new-team-parent").selectOption("consumer");
    await page.getByTestId("new-team-rpm").fill("120");
    await page.getByTestId("new-team-submit").click();
    await page.getByTestId("team-search-limits").filter({ hasText: "120 req/min" }).waitFor();
    expect(await page.getByTestId("team-search-line").textContent()).toBe("consumer");
    // What only the gateway knows comes back as its refusal, in the form that asked.
    await page.getByTestId("new-team-name").fill("search");
    await page.getByTestId("new-team-submit").click();
    const refused = await page.getByTestId("new-team-refused").textContent();
    expect(refused).toContain("The gateway refused it");
    expect(refused).toContain("AlreadyExists");

    await page.goto(`${h.url}/console/#keys`);
    await page.getByTestId("key-ops").waitFor();
    await page.getByTestId("new-key-name").fill("search-bot");
    await page.getByTestId("new-key-parent").selectOption("search");
    await page.getByTestId("new-key-usd").fill("5");
    await page.getByTestId("new-key-period").selectOption("day");
    await page.getByTestId("new-key-submit").click();
    await page.getByTestId("new-key-secret").waitFor();
    expect(await page.getByTestId("new-key-secret").textContent()).toContain("you will not see it again");
    const secret = await page.getByTestId("new-key-value").inputValue();
    expect(secret).toMatch(/^sk-sluice-[\w-]{43}$/);
    await page.getByTestId("new-key-copy").click();
    await page.getByText("Copied to the clipboard.").waitFor();
    expect(await page.evaluate("navigator.clipboard.readText()")).toBe(secret);

    // The row, with the team's business line beside it; the configured key is shown, not offered for change.
    await page.getByTestId("key-search-bot-budget").filter({ hasText: "$5.0000 / day" }).waitFor();
    expect(await page.getByTestId("key-search-bot-team").textContent()).toBe("search");
    expect(await page.getByTestId("key-search-bot-line").textContent()).toBe("consumer");
    expect(await page.getByTestId("key-search-bot-spend").textContent()).toBe("$0.0000 this day");
    expect(await page.getByTestId("key-search-bot-status").textContent()).toBe("active");
    expect(await page.getByTestId("key-ops-limits").textContent()).toBe("600 req/min");
    expect(await page.getByTestId("key-ops-edit").count()).toBe(0);
    await screenshot(page, "keys");

    // The secret is a working key, and the gateway kept its settings.
    expect(await chatStatus(h, secret)).toBe(200);
    const listed = (await admin.listKeys({})).keys.find((k) => k.name === "search-bot");
    expect(listed).toMatchObject({ team: "search", budget: { usdMicros: 5_000_000n, period: Period.DAY } });

    // Kept nowhere: not in either storage, not in the address; after a reload it is gone from the page too.
    expect(await kept(page)).not.toContain(secret);
    await page.reload();
    await page.getByTestId("key-search-bot").waitFor();
    expect(await page.getByTestId("new-key-secret").count()).toBe(0);
    expect(await page.content()).not.toContain(secret);
    expect(await kept(page)).not.toContain(secret);
    expect(h.logText()).not.toContain(secret);
    // The refused duplicate logged its status as a failed resource load; nothing else may show.
    expect(tab.errors.filter((e) => !e.startsWith("Failed to load resource"))).toEqual([]);
  }, 120_000);

  it("changes a key's budget and limits, revokes it (an edge then refuses it), then deletes its team and business line", async () => {
    await admin.createBusinessLine({ name: "revenue" });
    await admin.createTeam({ name: "ads", businessLine: "revenue" });
    const { key: secret } = await admin.createKey({ name: "ads-bot", team: "ads", budget: { usdMicros: 5_000_000n, period: Period.MONTH } });
    expect(await chatStatus(h, secret)).toBe(200);

    const { page } = tab;
    await open(page, h, "keys");
    await page.getByTestId("key-ads-bot-edit").click();
    expect(await page.getByTestId("edit-key-ads-bot-usd").inputValue()).toBe("5");
    expect(await page.getByTestId("edit-key-ads-bot-parent").inputValue()).toBe("ads");
    await page.getByTestId("edit-key-ads-bot-usd").fill("7.1234567");
    await page.getByTestId("edit-key-ads-bot-submit").click();
    expect(await page.getByTestId("edit-key-ads-bot-usd-problem").textContent()).toContain("at most 6 decimals");
    await page.getByTestId("edit-key-ads-bot-usd").fill("7.50");
    await page.getByTestId("edit-key-ads-bot-period").selectOption("week");
    await page.getByTestId("edit-key-ads-bot-rpm").fill("30");
    await page.getByTestId("edit-key-ads-bot-submit").click();
    await page.getByTestId("key-ads-bot-budget").filter({ hasText: "$7.5000 / week" }).waitFor();
    expect(await page.getByTestId("key-ads-bot-limits").textContent()).toBe("30 req/min");

    // After a reload the page reads the same from the gateway, and so does the admin API.
    await page.reload();
    await page.getByTestId("key-ads-bot-budget").filter({ hasText: "$7.5000 / week" }).waitFor();
    const listed = (await admin.listKeys({})).keys.find((k) => k.name === "ads-bot");
    expect(listed).toMatchObject({ team: "ads", budget: { usdMicros: 7_500_000n, period: Period.WEEK }, limits: { requestsPerMinute: 30 } });

    // A team with a key cannot go: the gateway says why, and the page shows it.
    await page.goto(`${h.url}/console/#teams`);
    await page.getByTestId("team-ads-keys").filter({ hasText: "1" }).waitFor();
    await page.getByTestId("team-ads-delete").click();
    await page.getByTestId("team-ads-delete-confirm").click();
    expect(await page.getByTestId("teams-action-problem").textContent()).toContain("FailedPrecondition");
    expect((await admin.listTeams({})).teams.map((t) => t.name)).toContain("ads");

    // Revoke, asked twice; then an edge refuses the key.
    await page.goto(`${h.url}/console/#keys`);
    await page.getByTestId("key-ads-bot-revoke").click();
    await page.getByRole("group", { name: /^Revoke ads-bot\? Every replica refuses it/ }).waitFor();
    await page.getByTestId("key-ads-bot-revoke-confirm").click();
    await page.getByTestId("key-ads-bot").waitFor({ state: "detached" });
    expect((await admin.listKeys({})).keys.map((k) => k.name)).not.toContain("ads-bot");
    expect(await chatStatus(h, secret)).toBe(401);

    // Now the team and then its business line can go.
    await page.goto(`${h.url}/console/#teams`);
    await page.getByTestId("team-ads-keys").filter({ hasText: "0" }).waitFor();
    await page.getByTestId("team-ads-delete").click();
    await page.getByTestId("team-ads-delete-confirm").click();
    await page.getByTestId("team-ads").waitFor({ state: "detached" });
    expect((await admin.listTeams({})).teams.map((t) => t.name)).not.toContain("ads");
    await page.goto(`${h.url}/console/#business-lines`);
    await page.getByTestId("line-revenue-delete").click();
    await page.getByTestId("line-revenue-delete-confirm").click();
    await page.getByTestId("line-revenue").waitFor({ state: "detached" });
    expect((await admin.listBusinessLines({})).businessLines.map((l) => l.name)).not.toContain("revenue");
    // The refused delete logged its status as a failed resource load; nothing else may show.
    expect(tab.errors.filter((e) => !e.startsWith("Failed to load resource"))).toEqual([]);
  }, 120_000);
});

describe("console tenancy pages without an admin key", () => {
  let h: Harness;
  const tab = useTab();
  beforeAll(async () => {
    h = await startHarness({ models: { demo: "sim-1?tokens=2" }, provider: { timeouts: FAR_TIMEOUTS }, console: { access: "open" } });
  });
  afterAll(() => h?.close());

  it("say what to configure, not that a method is not implemented", async () => {
    const { page } = tab;
    for (const [hash, testid] of [
      ["keys", "keys-problem"],
      ["teams", "teams-problem"],
      ["business-lines", "lines-problem"],
    ] as const) {
      await page.goto(`${h.url}/console/#${hash}`);
      const text = await page.getByTestId(testid).textContent();
      expect(text).toContain("set auth.adminKeyEnv");
      expect(text).toContain("tenant store");
      expect(text).not.toContain("not implemented");
    }
  });
});
