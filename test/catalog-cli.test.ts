import { execFile } from "node:child_process";
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { describe, expect, it } from "vitest";

/** The built CLI (dist/src/main.js, `npm run build`), as an operator runs it. */
const run = promisify(execFile);
async function sluice(...args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  try {
    const { stdout, stderr } = await run(process.execPath, ["dist/src/main.js", ...args], { env: { PATH: process.env.PATH ?? "" }, timeout: 60_000 });
    return { code: 0, stdout, stderr };
  } catch (error) {
    const e = error as { code: number; stdout: string; stderr: string };
    return { code: e.code, stdout: e.stdout, stderr: e.stderr };
  }
}

const dir = mkdtempSync(join(tmpdir(), "sluice-catalog-cli-"));
const write = (name: string, text: string) => {
  const path = join(dir, name);
  writeFileSync(path, text);
  return path;
};

describe("sluice catalog", () => {
  it("prints the built-in catalog as a table: prices, limits, capabilities and the day each was checked", async () => {
    const { code, stdout } = await sluice("catalog");
    expect(code).toBe(0);
    const lines = stdout.split("\n");
    expect(lines[0]).toMatch(/^model catalog \d{4}-\d{2}-\d{2}: \d+ of \d+ entries/);
    expect(lines[1]).toMatch(/^model\s+provider\s+kind\s+input\s+cached\s+write5m\s+write1h\s+output\s+reasoning\s+\/request\s+\/search\s+context\s+max out\s+TVJRC\s+checked$/);
    expect(lines.find((l) => l.startsWith("claude-sonnet-4 "))).toMatch(/^claude-sonnet-4\s+anthropic\s+chat\s+3\s+0\.3\s+3\.75\s+6\s+15\s+-\s+-\s+0\.01\s+200k\s+64k\s+TV\?RC\s+\d{4}-\d{2}-\d{2}$/);
  });

  it("filters by provider and id substring, and prints JSON in a catalog file's shape", async () => {
    const { code, stdout } = await sluice("catalog", "mini", "--provider", "openai", "--json");
    expect(code).toBe(0);
    const printed = JSON.parse(stdout) as { version: string; models: Array<{ id: string; provider: string; source: string }> };
    expect(printed.models.map((m) => m.id)).toEqual(["gpt-4.1-mini", "gpt-4o-mini", "gpt-5-mini", "o3-mini", "o4-mini"]);
    for (const m of printed.models) expect(m).toMatchObject({ provider: "openai", source: "https://platform.openai.com/docs/pricing" });
  });

  it("with --config, shows the effective catalog: the operator's entries over the built-in ones, marked", async () => {
    const catalog = write("ops.yaml", "version: ops-2\nmodels:\n  - { id: gpt-4o, provider: azure, price: { inputPerMTok: 2.75, outputPerMTok: 11 } }\n");
    const config = write("sluice.yaml", `catalog: { file: ${catalog} }\nproviders:\n  main: { kind: openai, baseUrl: 'http://127.0.0.1:9/v1' }\nmodels:\n  m: { provider: main, model: gpt-4o }\n`);
    const { code, stdout } = await sluice("catalog", "gpt-4o", "--config", config);
    expect(code).toBe(0);
    expect(stdout).toMatch(/^model catalog \S+\+ops-2: 2 of/);
    expect(stdout.split("\n").find((l) => l.startsWith("gpt-4o *"))).toMatch(/^gpt-4o \*\s+azure\s+chat\s+2\.75\s+-\s+-\s+-\s+11\s/);
  });
});

describe("check-config after catalog inheritance", () => {
  it("warns of a budgeted key that can reach a target no catalog entry prices, and not of one the catalog prices", async () => {
    const config = write(
      "budget.yaml",
      [
        "providers:",
        "  main: { kind: openai, baseUrl: 'http://127.0.0.1:9/v1' }",
        "models:",
        "  known: { provider: main, model: gpt-4o-mini-2024-07-18 }",
        "  azure: { provider: main, model: prod-east, catalog: gpt-4.1 }",
        "  unknown: { provider: main, model: house-model }",
        "auth:",
        "  keys:",
        `    - { name: capped, sha256: ${"a".repeat(64)}, budget: { usd: 5, period: day } }`,
        `    - { name: priced, sha256: ${"b".repeat(64)}, models: [known, azure], budget: { usd: 5, period: day } }`,
      ].join("\n"),
    );
    const { code, stdout } = await sluice("check-config", config);
    expect(code).toBe(0);
    expect(stdout.split("\n")).toEqual([
      `${config}: OK (1 provider, 3 model aliases)`,
      "warning: key capped has a budget (key) but may use aliases with unpriced targets: unknown (main/house-model); calls served there cost nothing and never count against the budget (set price on those targets, or catalog: to a priced catalog entry)",
      "",
    ]);
  });
});
