import { execFileSync } from "node:child_process";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { chartName, type Mode, resultsName } from "../bench/modes.js";

const ROOT = fileURLToPath(new URL("..", import.meta.url));

/** Whether git's ignore rules match the path, tracked or not. */
function ignored(path: string): boolean {
  try {
    execFileSync("git", ["check-ignore", "--quiet", "--no-index", path], { cwd: ROOT });
    return true;
  } catch {
    return false;
  }
}

function files(mode: Mode): string[] {
  return [`${resultsName(mode)}.json`, `${resultsName(mode)}.md`, chartName(mode), ...["admission", "resume", "ttft", "capacity"].flatMap((only) => [`${resultsName(mode, only)}.json`, `${resultsName(mode, only)}.md`])].map(
    (name) => `bench/results/${name}`,
  );
}

describe("benchmark results files", () => {
  it("a quick run never writes the committed full-run files", () => {
    const full = new Set([`${resultsName("full")}.json`, `${resultsName("full")}.md`, chartName("full")].map((name) => `bench/results/${name}`));
    expect([...full].sort()).toEqual(["bench/results/latest.json", "bench/results/latest.md", "bench/results/ttft-overhead.svg"]);
    for (const file of files("quick")) expect(full.has(file), file).toBe(false);
  });

  it("a quick run's files are all ignored by git, so it leaves the tree clean", () => {
    for (const file of files("quick")) expect(ignored(file), file).toBe(true);
  });

  it("an A/B run's files are ignored: they compare two arbitrary builds", () => {
    for (const file of ["bench/results/ab.json", "bench/results/ab.md"]) expect(ignored(file), file).toBe(true);
  });

  it("a full run's report and chart are not ignored: they are the ones committed", () => {
    for (const file of [`${resultsName("full")}.json`, `${resultsName("full")}.md`, chartName("full")]) expect(ignored(`bench/results/${file}`), file).toBe(false);
  });
});
