import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { builtInCatalog } from "../../src/config/built-in-catalog.js";
import { validateConfig } from "../../src/config/config.js";
import { lookupModel } from "../../src/config/model-catalog.js";
import { normalizeModelId } from "../../src/config/model-id.js";
import { costPicos } from "../../src/usage/cost.js";

const dir = mkdtempSync(join(tmpdir(), "sluice-catalog-"));
const file = (name: string, text: string) => {
  const path = join(dir, name);
  writeFileSync(path, text);
  return path;
};

const provider = { kind: "openai", baseUrl: "http://127.0.0.1:9/v1" };
const configOf = (models: Record<string, unknown>, extra: Record<string, unknown> = {}) => validateConfig({ providers: { p: provider, a: { kind: "anthropic", baseUrl: "http://127.0.0.1:9" } }, models, ...extra }, {});

describe("model ids, however a provider spells them", () => {
  it.each([
    ["anthropic.claude-sonnet-4-20250514-v1:0", "claude-sonnet-4"],
    ["us.anthropic.claude-sonnet-4-20250514-v1:0", "claude-sonnet-4"],
    ["global.anthropic.claude-opus-4-1-20250805-v1:0", "claude-opus-4-1"],
    ["apac.anthropic.claude-3-5-sonnet-20241022-v2:0", "claude-3-5-sonnet"],
    ["claude-sonnet-4@20250514", "claude-sonnet-4"],
    ["models/gemini-2.5-flash", "gemini-2.5-flash"],
    ["publishers/google/models/gemini-2.5-pro", "gemini-2.5-pro"],
    ["GPT-4o-mini-2024-07-18", "gpt-4o-mini"],
    ["claude-3-7-sonnet-latest", "claude-3-7-sonnet"],
    ["openai/gpt-4.1", "gpt-4.1"],
  ])("%s is %s", (model, id) => {
    expect(normalizeModelId(model)).toBe(id);
    expect(lookupModel(builtInCatalog(), model)?.id).toBe(id);
  });

  it("the longest id that prefixes the model at a `-` wins; a `.` is another model", () => {
    const at = (model: string) => lookupModel(builtInCatalog(), model)?.id;
    expect(at("gpt-4o-2024-08-06")).toBe("gpt-4o");
    expect(at("gpt-4o-mini")).toBe("gpt-4o-mini");
    expect(at("o3-mini")).toBe("o3-mini");
    expect(at("gemini-2.5-flash-lite-preview-06-17")).toBe("gemini-2.5-flash-lite");
    expect(at("gpt-5.1")).toBeUndefined();
    expect(at("gpt-4")).toBeUndefined();
    expect(at("my-finetune")).toBeUndefined();
  });

  it("every built-in priced entry says where its figures come from and when they were checked", () => {
    for (const entry of builtInCatalog().entries.values()) {
      if (entry.price) expect(entry.source, entry.id).toMatch(/^https:\/\//);
      if (entry.price) expect(entry.checked, entry.id).toMatch(/^\d{4}-\d{2}-\d{2}$/);
    }
  });
});

describe("a target inherits its catalog entry", () => {
  it("its price and capabilities, when it declares neither", () => {
    const loaded = configOf({ m: { provider: "a", model: "us.anthropic.claude-sonnet-4-20250514-v1:0" } });
    if (!loaded.ok) throw new Error(loaded.report);
    const target = loaded.config.models.get("m")!.targets[0]!;
    expect(target.catalog).toBe("claude-sonnet-4");
    expect(target.price).toMatchObject({ inputPerMTok: 3, cachedInputPerMTok: 0.3, cacheWrite5mPerMTok: 3.75, cacheWrite1hPerMTok: 6, outputPerMTok: 15 });
    expect(target.capabilities).toMatchObject({ contextWindow: 200_000, maxOutputTokens: 64_000, reasoning: true });
  });

  it("a declared price replaces the entry's whole; declared capabilities win field by field", () => {
    const loaded = configOf({ m: { provider: "p", model: "gpt-4o", price: { inputPerMTok: 2, outputPerMTok: 9 }, capabilities: { contextWindow: 64_000 } } });
    if (!loaded.ok) throw new Error(loaded.report);
    const target = loaded.config.models.get("m")!.targets[0]!;
    // The entry's cached-input rate is not mixed into a negotiated price: unset there means the declared input price.
    expect(target.price).toEqual({ inputPerMTok: 2, outputPerMTok: 9 });
    expect(target.capabilities).toMatchObject({ contextWindow: 64_000, maxOutputTokens: 16_384, vision: true });
  });

  it("`catalog:` names the entry of a model whose id does not say (an Azure deployment)", () => {
    const loaded = configOf({ m: { targets: [{ provider: "p", model: "prod-chat-east", catalog: "gpt-4.1-mini" }] } });
    if (!loaded.ok) throw new Error(loaded.report);
    expect(loaded.config.models.get("m")!.targets[0]!.price).toMatchObject({ inputPerMTok: 0.4, outputPerMTok: 1.6 });
  });

  it("a model the catalog does not know stays unpriced", () => {
    const loaded = configOf({ m: { provider: "p", model: "sim-1" } });
    if (!loaded.ok) throw new Error(loaded.report);
    expect(loaded.config.models.get("m")!.targets[0]!.price).toBeUndefined();
  });

  it("a `catalog:` that names no entry is a problem at its path", () => {
    const loaded = configOf({ m: { provider: "p", model: "x", catalog: "gpt-9" } });
    expect(loaded.ok).toBe(false);
    if (!loaded.ok) expect(loaded.problems).toEqual(['models.m.catalog: no catalog entry "gpt-9" (sluice catalog lists them)']);
  });
});

describe("the operator's catalog file", () => {
  it("replaces built-in entries and adds its own, YAML or JSON", () => {
    const path = file(
      "ops.yaml",
      ["version: ops-7", "models:", "  - { id: gpt-4o, provider: azure, price: { inputPerMTok: 2.75, outputPerMTok: 11 } }", "  - { id: house/llama, provider: vllm, match: explicit, price: { inputPerMTok: 0.1, outputPerMTok: 0.1 } }"].join(
        "\n",
      ),
    );
    const loaded = configOf({ a: { provider: "p", model: "gpt-4o" }, b: { provider: "p", model: "llama", catalog: "house/llama" } }, { catalog: { file: path } });
    if (!loaded.ok) throw new Error(loaded.report);
    expect(loaded.config.models.get("a")!.targets[0]!.price).toEqual({ inputPerMTok: 2.75, outputPerMTok: 11 });
    expect(loaded.config.models.get("b")!.targets[0]!.price).toEqual({ inputPerMTok: 0.1, outputPerMTok: 0.1 });
    expect(loaded.config.catalog?.version).toMatch(/\+ops-7$/);
    expect([...loaded.config.catalog!.fromFile].sort()).toEqual(["gpt-4o", "house/llama"]);
  });

  it("is checked with the same schema, each problem named", () => {
    const path = file("bad.json", JSON.stringify({ version: "x", models: [{ id: "Bad Id", provider: "p", price: { inputPerMTok: -1, outputPerMTok: 1 } }] }));
    const loaded = configOf({ a: { provider: "p", model: "x" } }, { catalog: { file: path } });
    expect(loaded.ok).toBe(false);
    if (!loaded.ok) {
      expect(loaded.problems.some((p) => p.startsWith(`catalog.file: ${path}: models.0.id:`))).toBe(true);
      expect(loaded.problems.some((p) => p.startsWith(`catalog.file: ${path}: models.0.price.inputPerMTok:`))).toBe(true);
    }
  });

  it("is bounded in size, and an unreadable one is a problem", () => {
    const big = file("big.yaml", `version: x\nmodels: []\n# ${"x".repeat(1_048_576)}\n`);
    const tooBig = configOf({ a: { provider: "p", model: "x" } }, { catalog: { file: big } });
    expect(tooBig.ok === false && tooBig.problems).toEqual([`catalog.file: ${big} is larger than 1048576 bytes`]);
    const missing = configOf({ a: { provider: "p", model: "x" } }, { catalog: { file: join(dir, "none.yaml") } });
    expect(missing.ok === false && missing.problems).toEqual([`catalog.file: cannot read ${join(dir, "none.yaml")}: ENOENT`]);
  });
});

describe("cost of the new priced fields", () => {
  const price = { inputPerMTok: 1, outputPerMTok: 10, reasoningPerMTok: 4, perRequest: 0.001 };
  it("reasoning is priced apart from the rest of output, capped at the output", () => {
    expect(costPicos({ inputTokens: 0, outputTokens: 100, cachedInputTokens: 0, reasoningTokens: 40 }, { inputPerMTok: 1, outputPerMTok: 10, reasoningPerMTok: 4 })).toBe(60n * 10_000_000n + 40n * 4_000_000n);
    expect(costPicos({ inputTokens: 0, outputTokens: 10, cachedInputTokens: 0, reasoningTokens: 40 }, { inputPerMTok: 1, outputPerMTok: 10, reasoningPerMTok: 4 })).toBe(10n * 4_000_000n);
  });
  it("a request that answered pays its fee once per upstream request; one that used nothing pays none", () => {
    expect(costPicos({ inputTokens: 1, outputTokens: 0, cachedInputTokens: 0, reasoningTokens: 0 }, price)).toBe(1_000_000n + 1_000n * 1_000_000n);
    expect(costPicos({ inputTokens: 1, outputTokens: 0, cachedInputTokens: 0, reasoningTokens: 0, requests: 3 }, price)).toBe(1_000_000n + 3_000n * 1_000_000n);
    expect(costPicos({ inputTokens: 0, outputTokens: 0, cachedInputTokens: 0, reasoningTokens: 0 }, price)).toBe(0n);
  });
});
