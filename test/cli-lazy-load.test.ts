import { execFile } from "node:child_process";
import { mkdtemp, readFile, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { describe, expect, it } from "vitest";

const run = promisify(execFile);

/** Module hooks (node:module register) that append every resolved URL to $SLUICE_TRACE_FILE. */
const HOOKS = `import { appendFileSync } from "node:fs";
export async function resolve(specifier, context, next) {
  const result = await next(specifier, context);
  appendFileSync(process.env.SLUICE_TRACE_FILE, result.url + "\\n");
  return result;
}`;
const REGISTER = `import { register } from "node:module"; register(${JSON.stringify(`data:text/javascript,${encodeURIComponent(HOOKS)}`)});`;

/** Runs the built CLI and returns the gateway's own modules it loaded (paths under dist/src/). */
async function modulesLoaded(args: readonly string[]): Promise<string[]> {
  const dir = await mkdtemp(join(tmpdir(), "sluice-trace-"));
  const trace = join(dir, "modules.txt");
  await writeFile(trace, "");
  await run(process.execPath, ["--import", `data:text/javascript,${encodeURIComponent(REGISTER)}`, "dist/src/main.js", ...args], {
    env: { PATH: process.env.PATH, SLUICE_TRACE_FILE: trace },
  }).catch((error: { code?: number }) => {
    if (typeof error.code !== "number") throw error;
  });
  const own = (await readFile(trace, "utf8")).split("\n").flatMap((url) => /\/dist\/src\/(.+\.js)$/.exec(url)?.[1] ?? []);
  return [...new Set(own)].sort();
}

/**
 * `sluice --help` and `check-config` used to import the whole gateway (the
 * pipeline, every edge, the stores) before reading their arguments: 8-10x a
 * bare Node start, 7-18 s per call on a loaded machine. Each command loads
 * what it runs; what is loaded is observed, not timed.
 */
describe("the CLI loads only what a command needs", () => {
  it("--help and a usage error load nothing but main.js", async () => {
    expect(await modulesLoaded(["--help"])).toEqual(["main.js"]);
    expect(await modulesLoaded(["frobnicate"])).toEqual(["main.js"]);
  });

  it("check-config loads the configuration's modules, not the gateway", async () => {
    const file = join(await mkdtemp(join(tmpdir(), "sluice-check-")), "sluice.yaml");
    await writeFile(file, "providers:\n  main: { kind: openai, baseUrl: 'http://127.0.0.1:9/v1' }\nmodels:\n  m: { provider: main, model: x }\n");
    const loaded = await modulesLoaded(["check-config", file]);
    expect(loaded).toContain("cli/check-config.js");
    expect(loaded).toContain("config/config.js");
    for (const gateway of ["app.js", "routes.js", "server/", "pipeline/", "edges/", "providers/", "store/", "telemetry/", "simulator/"]) {
      expect(
        loaded.filter((path) => path.startsWith(gateway)),
        gateway,
      ).toEqual([]);
    }
  });
});
