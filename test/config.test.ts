import { execFile } from "node:child_process";
import { mkdtemp, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { describe, expect, it } from "vitest";
import { ConfigError, loadConfigFile, resolveConfig } from "../src/config/config.js";

const run = promisify(execFile);
const minimal = {
  providers: { main: { kind: "openai", baseUrl: "http://127.0.0.1:9/v1" } },
  models: { m: { provider: "main", model: "gpt" } },
};

function configError(input: unknown, env: NodeJS.ProcessEnv = {}): string {
  try {
    resolveConfig(input, env, "test.yaml");
  } catch (e) {
    expect(e).toBeInstanceOf(ConfigError);
    return (e as Error).message;
  }
  throw new Error("expected a ConfigError");
}

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
    });
    expect(config.limits).toEqual({ maxEventBytes: 1_048_576, maxRequestBytes: 4 * 1024 * 1024, maxRequestElements: 20_000, maxJsonDepth: 32 });
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
    ["typo in a key", { ...minimal, sever: {} }, "(root)"],
    ["port out of range", { ...minimal, server: { port: 70000 } }, "server.port"],
    ["no models", { ...minimal, models: {} }, "models: at least one model alias"],
    ["a key instead of an env var name", { ...minimal, providers: { main: { kind: "openai", baseUrl: "http://x", apiKeyEnv: "sk-abc 123" } } }, "providers.main.apiKeyEnv"],
  ];
  for (const [name, input, path] of bad) {
    it(`${name}: fails naming ${path}`, () => {
      expect(configError(input)).toContain(path);
    });
  }

  it("fails at start-up when an API key variable is unset", () => {
    const input = { ...minimal, providers: { main: { ...minimal.providers.main, apiKeyEnv: "MISSING_KEY" } } };
    expect(configError(input)).toContain("providers.main.apiKeyEnv: environment variable MISSING_KEY is not set");
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
    const result = await run(process.execPath, ["dist/src/main.js", "--config", file, "--port", "0"]).then(
      () => ({ code: 0, stderr: "" }),
      (e: { code: number; stderr: string }) => e,
    );
    expect(result.code).toBe(1);
    expect(result.stderr).toContain("providers.main.baseUrl");
  });
});
