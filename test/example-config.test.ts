import { execFile } from "node:child_process";
import { readFileSync } from "node:fs";
import { promisify } from "node:util";
import { describe, expect, it } from "vitest";

const run = promisify(execFile);
const EXAMPLE = "examples/sluice.example.yaml";

/** The built CLI, with only PATH and `env` in its environment: exit code and output. */
async function checkConfig(env: NodeJS.ProcessEnv): Promise<{ code: number; stdout: string }> {
  return run(process.execPath, ["dist/src/main.js", "check-config", EXAMPLE], { env: { PATH: process.env.PATH, ...env } }).then(
    ({ stdout }) => ({ code: 0, stdout }),
    (e: { code: number; stdout: string }) => e,
  );
}

describe(`${EXAMPLE}, the sample configuration`, () => {
  const text = readFileSync(EXAMPLE, "utf8");
  /** The comment block at the top of the file. */
  const header = text.slice(0, text.search(/^[^#\n]/m));

  it("asks only for the key variables its header names", async () => {
    const { code, stdout } = await checkConfig({});
    expect(code).toBe(1);
    const problems = stdout.split("\n").slice(1, -1);
    const unset = problems.map((line) => /environment variable ([A-Z_]+) is not set/.exec(line)?.[1]);
    expect(unset, stdout).not.toContain(undefined);
    expect(unset.length).toBeGreaterThan(0);
    for (const variable of unset) expect(header).toContain(variable);
  });

  it("passes sluice check-config once those variables are set", async () => {
    const variables = [...new Set([...header.matchAll(/\b([A-Z][A-Z0-9]*_[A-Z0-9_]*KEY)\b/g)].map((m) => m[1]!))];
    const env = Object.fromEntries(variables.map((name) => [name, `example-${name.toLowerCase()}-0123456789abcdef`]));
    const { code, stdout } = await checkConfig(env);
    expect({ code, stdout }).toEqual({ code: 0, stdout: `${EXAMPLE}: OK (4 providers, 4 model aliases)\n` });
  });

  it("points to documents and sections that exist", () => {
    const comments = text
      .split("\n")
      .filter((line) => line.startsWith("#"))
      .map((line) => line.replace(/^#\s?/, ""))
      .join(" ");
    const pointers = [...comments.matchAll(/\b(README|docs\/[a-z-]+\.md)\b(?:\s*\(([^)]*)\))?/g)];
    expect(pointers.length).toBeGreaterThan(0);
    for (const [, name, sections] of pointers) {
      const file = name === "README" ? "README.md" : name!;
      const headings = readFileSync(file, "utf8")
        .split("\n")
        .filter((line) => /^#{1,6} /.test(line))
        .map((line) => line.replace(/^#+ /, "").trim());
      for (const section of [...(sections ?? "").matchAll(/"([^"]+)"/g)].map((m) => m[1]!)) {
        expect(headings, `${file} has no section "${section}"`).toContain(section);
      }
    }
  });

  it("is where docs/configuration.md introduces the configuration", () => {
    const doc = readFileSync("docs/configuration.md", "utf8");
    const section = doc.slice(0, doc.indexOf("\n## Reference\n"));
    expect(section).toContain(`[${EXAMPLE}](../${EXAMPLE})`);
  });
});
