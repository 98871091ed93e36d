import { PassThrough } from "node:stream";
import { describe, expect, it } from "vitest";
import { type Config, type ConfigLoad, resolveConfig } from "../src/config/config.js";
import { createLiveConfig } from "../src/config/live-config.js";
import { LIVE_SETTINGS, RESTART_ONLY_SETTINGS } from "../src/config/restart-only.js";
import { createLogger } from "../src/logging/logger.js";

const configWith = (models: Record<string, string>, server: Record<string, unknown> = {}): Config =>
  resolveConfig(
    {
      server,
      providers: { main: { kind: "openai", baseUrl: "http://127.0.0.1:9/v1" } },
      models: Object.fromEntries(Object.entries(models).map(([alias, model]) => [alias, { provider: "main", model }])),
    },
    {},
  );

/** A logger whose lines the test reads back. */
function capturedLogger() {
  let text = "";
  const sink = new PassThrough();
  sink.on("data", (chunk: Buffer) => (text += chunk.toString("utf8")));
  const lines = () =>
    text
      .split("\n")
      .filter(Boolean)
      .map((l) => JSON.parse(l) as Record<string, unknown>);
  return { logger: createLogger("info", sink), lines };
}

/** A source whose loads the test settles one by one. */
function manualSource() {
  const pending: Array<(load: ConfigLoad) => void> = [];
  return {
    pending,
    source: { name: "test.yaml", load: () => new Promise<ConfigLoad>((resolve) => pending.push(resolve)) },
  };
}

/** Lets queued promise callbacks run (no timers involved). */
const settle = () => new Promise<void>((resolve) => setImmediate(resolve));

describe("the live configuration", () => {
  it("a good load becomes current whole, listeners see it as current, and the reload is counted and logged", async () => {
    const { logger, lines } = capturedLogger();
    const first = configWith({ a: "m1" });
    const second = configWith({ a: "m1", b: "m2" });
    const { source, pending } = manualSource();
    const live = createLiveConfig({ initial: first, source, logger });
    const seen: Array<[Config, Config, Config]> = [];
    live.onChange((next, previous) => seen.push([next, previous, live.current()]));
    const reloading = live.reload("test");
    await settle();
    expect(live.current()).toBe(first); // nothing changes until the file is read and checked
    pending.shift()!({ ok: true, config: second });
    expect(await reloading).toBe("reloaded");
    expect(live.current()).toBe(second);
    expect(seen).toEqual([[second, first, second]]);
    expect(live.counts()).toEqual({ ok: 1, failed: 0 });
    expect(lines().at(-1)).toMatchObject({ event: "config.reloaded", trigger: "test", source: "test.yaml", models: { added: ["b"] }, reloads: { ok: 1, failed: 0 } });
  });

  it("a bad load keeps the current configuration, tells no listener, and logs every problem", async () => {
    const { logger, lines } = capturedLogger();
    const first = configWith({ a: "m1" });
    const { source, pending } = manualSource();
    const live = createLiveConfig({ initial: first, source, logger });
    let told = 0;
    live.onChange(() => told++);
    const reloading = live.reload("test");
    await settle();
    pending.shift()!({ ok: false, problems: ["one (line 1)", "two (line 2)"], report: "" });
    expect(await reloading).toBe("failed");
    expect(live.current()).toBe(first);
    expect(told).toBe(0);
    expect(live.counts()).toEqual({ ok: 0, failed: 1 });
    expect(lines().at(-1)).toMatchObject({ event: "config.reload_failed", problems: ["one (line 1)", "two (line 2)"], reloads: { ok: 0, failed: 1 } });
  });

  it("reloads run one at a time, in the order asked", async () => {
    const { logger } = capturedLogger();
    const { source, pending } = manualSource();
    const live = createLiveConfig({ initial: configWith({ a: "m1" }), source, logger });
    const second = configWith({ b: "m2" });
    const third = configWith({ c: "m3" });
    const one = live.reload("first");
    const two = live.reload("second");
    await settle();
    expect(pending).toHaveLength(1); // the second read waits for the first reload to finish
    pending.shift()!({ ok: true, config: second });
    await one;
    await settle();
    expect(pending).toHaveLength(1);
    pending.shift()!({ ok: true, config: third });
    await two;
    expect(live.current()).toBe(third);
  });

  it("a loader that throws, or a listener that throws, never takes the reload (or the gateway) down", async () => {
    const { logger, lines } = capturedLogger();
    const next = configWith({ b: "m2" });
    let calls = 0;
    const live = createLiveConfig({
      initial: configWith({ a: "m1" }),
      source: { name: "test.yaml", load: () => (++calls === 1 ? Promise.reject(new Error("disk on fire")) : Promise.resolve({ ok: true, config: next })) },
      logger,
    });
    expect(await live.reload("test")).toBe("failed");
    expect(lines().at(-1)).toMatchObject({ event: "config.reload_failed", problems: ["Error: disk on fire"] });
    const after: string[] = [];
    live.onChange(() => {
      throw new Error("listener bug");
    });
    live.onChange(() => after.push("told"));
    expect(await live.reload("test")).toBe("reloaded");
    expect(after).toEqual(["told"]);
    expect(lines().some((l) => l.event === "config.listener_failed")).toBe(true);
    expect(live.counts()).toEqual({ ok: 1, failed: 1 });
  });

  it("a provider whose key changed is reported as changed, by name, and the key never reaches the log", async () => {
    const { logger, lines } = capturedLogger();
    const withKey = (variable: string, env: NodeJS.ProcessEnv) => resolveConfig({ providers: { main: { kind: "openai", baseUrl: "http://127.0.0.1:9/v1", apiKeyEnv: variable } }, models: { a: { provider: "main", model: "m" } } }, env);
    const env = { OLD_KEY: "sk-old-secret-value", NEW_KEY: "sk-new-secret-value" };
    const next = withKey("NEW_KEY", env);
    const live = createLiveConfig({ initial: withKey("OLD_KEY", env), source: { name: "test.yaml", load: async () => ({ ok: true, config: next }) }, logger });
    await live.reload("test");
    expect(lines().at(-1)).toMatchObject({ event: "config.reloaded", providers: { changed: ["main"] }, models: { changed: [] } });
    expect(JSON.stringify(lines())).not.toMatch(/secret-value/);
  });

  it("without a file (the built-in default) a reload is skipped and says why", async () => {
    const { logger, lines } = capturedLogger();
    const live = createLiveConfig({ initial: configWith({ a: "m1" }), logger });
    expect(await live.reload("SIGHUP")).toBe("skipped");
    expect(lines().at(-1)).toMatchObject({ event: "config.reload_skipped", trigger: "SIGHUP" });
    expect(live.counts()).toEqual({ ok: 0, failed: 0 });
  });

  it("names the settings only a restart applies, and nothing else, on every reload until the restart", async () => {
    const { logger, lines } = capturedLogger();
    const files = [configWith({ a: "m2" }, { port: 9999, drainMs: 1, maxConnections: 5 }), configWith({ a: "m3" }, { port: 9999 }), configWith({ a: "m4" })];
    const live = createLiveConfig({ initial: configWith({ a: "m1" }), source: { name: "test.yaml", load: async () => ({ ok: true, config: files.shift()! }) }, logger });
    for (let i = 0; i < 3; i++) await live.reload("test");
    const warnings = lines().filter((l) => l.event === "config.restart_required");
    // The port still differs from what the listener runs at the second reload; the third file is back to it.
    expect(warnings.map((l) => l.fields)).toEqual([["server.port", "server.maxConnections"], ["server.port"]]);
  });
});

describe("every setting is either applied by a reload or named when it needs a restart", () => {
  it("covers each field of server, log, limits, facade, batch and responses, and every other section", () => {
    const config = configWith({ a: "m1" });
    const classified = new Set<string>([...RESTART_ONLY_SETTINGS, ...LIVE_SETTINGS]);
    const settings = ["server", "log", "limits", "facade", "batch", "responses"] as const;
    const fields = settings.flatMap((section) => Object.keys(config[section]).map((key) => `${section}.${key}`));
    expect(fields).toContain("server.tls"); // present even when unset, so it is checked too
    const sections = Object.keys(config).filter((key) => !(settings as readonly string[]).includes(key));
    expect([...fields, ...sections].filter((field) => !classified.has(field))).toEqual([]);
  });
});
