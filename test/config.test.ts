import { execFile } from "node:child_process";
import { mkdtemp, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { describe, expect, it } from "vitest";
import { loadConfigFile, resolveConfig } from "../src/config/config.js";
import { configErrors } from "./helpers/config-errors.js";

const run = promisify(execFile);
const minimal = {
  providers: { main: { kind: "openai", baseUrl: "http://127.0.0.1:9/v1" } },
  models: { m: { provider: "main", model: "gpt" } },
};

describe("configuration", () => {
  it("applies defaults and merges timeouts model over provider over defaults", () => {
    const config = resolveConfig(
      {
        providers: { main: { kind: "openai", baseUrl: "http://127.0.0.1:9/v1/", timeouts: { idleMs: 1000, connectMs: 50 } } },
        models: { m: { provider: "main", model: "gpt", timeouts: { idleMs: 2000 } } },
      },
      {},
    );
    expect(config.server).toEqual({
      host: "127.0.0.1",
      port: 8080,
      drainMs: 10_000,
      keepaliveMs: 30_000,
      debugEndpoints: false,
      headersTimeoutMs: 10_000,
      requestTimeoutMs: 30_000,
      idleTimeoutMs: 60_000,
      sendTimeoutMs: 60_000,
      maxConnections: 10_000,
      maxStreamsPerConnection: 1_000,
      watchConfig: false,
    });
    expect(config.limits).toEqual({ maxAnswerBytes: 8_388_608, maxEventBytes: 1_048_576, maxRequestBytes: 4 * 1024 * 1024, maxRequestElements: 20_000, maxJsonDepth: 32 });
    expect(config.providers.get("main")!.baseUrl).toBe("http://127.0.0.1:9/v1");
    expect(config.models.get("m")!.targets[0]!.timeouts).toMatchObject({ idleMs: 2000, connectMs: 50, headersMs: 30_000 });
  });

  it("honours the deprecated facade.maxBodyBytes as the request limit, and limits.maxRequestBytes over it", () => {
    const old = resolveConfig({ ...minimal, facade: { maxBodyBytes: 65_536 } }, {});
    expect(old.limits.maxRequestBytes).toBe(65_536);
    const both = resolveConfig({ ...minimal, facade: { maxBodyBytes: 65_536 }, limits: { maxRequestBytes: 8192 } }, {});
    expect(both.limits.maxRequestBytes).toBe(8192);
  });

  const bad: Array<[string, unknown, string]> = [
    ["bad URL", { ...minimal, providers: { main: { kind: "openai", baseUrl: "not a url" } } }, "providers.main.baseUrl"],
    ["unknown kind", { ...minimal, providers: { main: { kind: "cohere", baseUrl: "http://x" } } }, "providers.main.kind"],
    ["alias to a missing provider", { ...minimal, models: { m: { provider: "ghost", model: "x" } } }, 'models.m.provider: unknown provider "ghost"'],
    ["negative timeout", { ...minimal, models: { m: { provider: "main", model: "x", timeouts: { idleMs: -1 } } } }, "models.m.timeouts.idleMs"],
    ["typo in a key", { ...minimal, sever: {} }, "sever: unknown key"],
    ["port out of range", { ...minimal, server: { port: 70000 } }, "server.port"],
    ["no models", { ...minimal, models: {} }, "models: at least one model alias"],
    ["a key instead of an env var name", { ...minimal, providers: { main: { kind: "openai", baseUrl: "http://x", apiKeyEnv: "sk-abc 123" } } }, "providers.main.apiKeyEnv"],
    ["an unknown thinking form", { ...minimal, providers: { main: { kind: "anthropic", baseUrl: "http://x", thinking: "always" } } }, "providers.main.thinking"],
    ["thinking on an OpenAI provider", { ...minimal, providers: { main: { kind: "openai", baseUrl: "http://x", thinking: "budget" } } }, "providers.main.thinking: only for providers of kind anthropic"],
    [
      "thinking on a target of an OpenAI provider",
      { ...minimal, models: { m: { targets: [{ provider: "main", model: "gpt", thinking: "adaptive" }] } } },
      'models.m.targets.0.thinking: only for targets on an anthropic provider ("main" is openai)',
    ],
  ];
  for (const [name, input, path] of bad) {
    it(`${name}: fails naming ${path}`, () => {
      expect(configErrors(input)).toContain(path);
    });
  }

  it("fails at start-up when an API key variable is unset", () => {
    const input = { ...minimal, providers: { main: { ...minimal.providers.main, apiKeyEnv: "MISSING_KEY" } } };
    expect(configErrors(input)).toContain("providers.main.apiKeyEnv: environment variable MISSING_KEY is not set");
  });

  it("reports every problem in one run: schema, references and every unset key variable", () => {
    const message = configErrors({
      server: { port: "x", drainMs: -1 },
      providers: {
        a: { kind: "cohere", baseUrl: "nope", apiKeyEnv: "A_KEY" },
        b: { kind: "openai", baseUrl: "http://x", apiKeyEnv: "B_KEY" },
      },
      models: { m: { provider: "ghost", model: "x" }, n: { provider: "a" } },
    });
    const expected = [
      "server.port:",
      "server.drainMs:",
      "providers.a.kind:",
      "providers.a.baseUrl:",
      "providers.a.apiKeyEnv: environment variable A_KEY is not set",
      "providers.b.apiKeyEnv: environment variable B_KEY is not set",
      'models.m.provider: unknown provider "ghost"',
      "models.n.model:",
    ];
    for (const line of expected) expect(message).toContain(line);
    expect(message).toContain("(8 problems)");
  });

  it("never puts the key value in the resolved config's printable form", () => {
    const input = { ...minimal, providers: { main: { ...minimal.providers.main, apiKeyEnv: "K" } } };
    const config = resolveConfig(input, { K: "sk-very-secret-value" });
    const provider = config.providers.get("main")!;
    expect(JSON.stringify(provider)).not.toContain("sk-very-secret-value");
    expect(String(provider.apiKey)).toBe("[redacted]");
    expect(provider.apiKey!.reveal()).toBe("sk-very-secret-value");
  });

  it("reports YAML syntax errors with the file name", async () => {
    const dir = await mkdtemp(join(tmpdir(), "sluice-"));
    const file = join(dir, "bad.yaml");
    await writeFile(file, "providers: [unclosed\n");
    await expect(loadConfigFile(file, {})).rejects.toThrow(`invalid YAML in ${file}`);
  });

  it("the gateway process refuses to start on a bad config and names the field", async () => {
    const dir = await mkdtemp(join(tmpdir(), "sluice-"));
    const file = join(dir, "sluice.yaml");
    await writeFile(file, "providers:\n  main:\n    kind: openai\n    baseUrl: ftp://nope\nmodels:\n  m: { provider: main, model: x }\n");
    const result = await run(process.execPath, ["dist/src/main.js", "--config", file, "--port", "0"], { timeout: 60_000 }).then(
      () => ({ code: 0, stderr: "" }),
      (e: { code: number; stderr: string }) => e,
    );
    expect(result.code).toBe(1);
    expect(result.stderr).toContain("providers.main.baseUrl");
  });
});

describe("sluice check-config", () => {
  const BAD = [
    "sever: {}", // 1
    "server:", // 2
    '  port: "x"', // 3
    "providers:", // 4
    "  a:", // 5
    "    kind: cohere", // 6
    "    baseUrl: http://127.0.0.1:9/v1", // 7
    "    apiKeyEnv: A_KEY", // 8
    "  b: { kind: openai, baseUrl: 'http://127.0.0.1:9/v1', apiKeyEnv: B_KEY }", // 9
    "models:", // 10
    "  m: { provider: ghost, model: x }", // 11
    "",
  ].join("\n");

  async function file(text: string): Promise<string> {
    const path = join(await mkdtemp(join(tmpdir(), "sluice-check-")), "sluice.yaml");
    await writeFile(path, text);
    return path;
  }

  async function sluice(args: string[], env: NodeJS.ProcessEnv = {}): Promise<{ code: number; stdout: string; stderr: string }> {
    return run(process.execPath, ["dist/src/main.js", ...args], { env: { PATH: process.env.PATH, ...env } }).then(
      ({ stdout, stderr }) => ({ code: 0, stdout, stderr }),
      (e: { code: number; stdout: string; stderr: string }) => e,
    );
  }

  it("reports every problem of a bad file in one run, in file order with lines, and exits 1", async () => {
    const path = await file(BAD);
    const { code, stdout } = await sluice(["check-config", path]);
    expect(code).toBe(1);
    expect(stdout.split("\n")).toEqual([
      `invalid configuration in ${path} (6 problems):`,
      "  sever: unknown key (line 1)",
      "  server.port: Invalid input: expected number, received string (line 3)",
      '  providers.a.kind: Invalid option: expected one of "openai"|"anthropic"|"gemini"|"openai-responses"|"azure-openai"|"bedrock"|"vertex" (line 6)',
      "  providers.a.apiKeyEnv: environment variable A_KEY is not set (line 8)",
      "  providers.b.apiKeyEnv: environment variable B_KEY is not set (line 9)",
      '  models.m.provider: unknown provider "ghost" (line 11)',
      "",
    ]);
  });

  it("--config FILE --check is the same check", async () => {
    const path = await file(BAD);
    const { code, stdout } = await sluice(["--config", path, "--check"]);
    expect(code).toBe(1);
    expect(stdout).toContain("(6 problems)");
  });

  it("a good file prints OK and exits 0, once its key variables are set", async () => {
    const path = await file("providers:\n  main: { kind: openai, baseUrl: 'http://127.0.0.1:9/v1', apiKeyEnv: MAIN_KEY }\nmodels:\n  m: { provider: main, model: x }\n");
    const unset = await sluice(["check-config", path]);
    expect(unset.code).toBe(1);
    expect(unset.stdout).toContain("providers.main.apiKeyEnv: environment variable MAIN_KEY is not set (line 2)");
    const set = await sluice(["check-config", path], { MAIN_KEY: "sk-check-secret" });
    expect(set).toMatchObject({ code: 0, stdout: `${path}: OK (1 provider, 1 model alias)\n` });
    expect(set.stdout + set.stderr).not.toContain("sk-check-secret");
  });

  it("warns of a key whose budget can reach an unpriced alias (its calls there never spend), and still exits 0", async () => {
    const path = await file(
      [
        "providers:",
        "  main: { kind: openai, baseUrl: 'http://127.0.0.1:9/v1' }",
        "models:",
        "  priced: { provider: main, model: x, price: { inputPerMTok: 1, outputPerMTok: 2 } }",
        "  free: { provider: main, model: y }",
        "auth:",
        "  teams: [{ name: crew, budget: { usd: 5, period: month } }]",
        "  keys:",
        "    - { name: capped, sha256: " + "a".repeat(64) + ", budget: { usd: 1, period: day } }",
        "    - { name: pricedonly, sha256: " + "b".repeat(64) + ", models: [priced], budget: { usd: 1, period: day } }",
        "    - { name: inteam, sha256: " + "c".repeat(64) + ", team: crew }",
        "    - { name: unbudgeted, sha256: " + "d".repeat(64) + " }",
        "",
      ].join("\n"),
    );
    const { code, stdout } = await sluice(["check-config", path]);
    expect(code).toBe(0);
    expect(stdout.split("\n")).toEqual([
      `${path}: OK (1 provider, 2 model aliases)`,
      "warning: key capped has a budget (key) but may use aliases with unpriced targets: free (main/y); calls served there cost nothing and never count against the budget (set price on those targets, or catalog: to a priced catalog entry)",
      "warning: key inteam has a budget (team crew) but may use aliases with unpriced targets: free (main/y); calls served there cost nothing and never count against the budget (set price on those targets, or catalog: to a priced catalog entry)",
      "",
    ]);
  });

  it("names every YAML syntax error, and an unreadable file, and exits 1", async () => {
    const broken = await sluice(["check-config", await file("a: [\nb: {\n")]);
    expect(broken.code).toBe(1);
    expect(broken.stdout.match(/invalid YAML in/g)).toHaveLength(2);
    const missing = await sluice(["check-config", "/nonexistent/sluice.yaml"]);
    expect(missing).toMatchObject({ code: 1, stdout: "cannot read configuration file /nonexistent/sluice.yaml: ENOENT\n" });
  });

  it("a command line it does not understand gets the usage and exit status 2", async () => {
    for (const args of [["check-config"], ["--check"], ["frobnicate"]]) {
      const { code, stderr } = await sluice(args);
      expect(code).toBe(2);
      expect(stderr).toContain("usage: sluice");
    }
  });
});
