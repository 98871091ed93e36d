import { existsSync, readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { gzipSync } from "node:zlib";
import { describe, expect, it } from "vitest";
import { defaultConsoleDir } from "../src/console/console-assets.js";

/** The issue's budget for everything the page loads, gzipped. */
const LIMIT_BYTES = 150 * 1024;

/** The console `npm run build` made (npm test builds before it runs the suite). */
function built(): { dir: string; files: string[] } {
  const dir = defaultConsoleDir();
  if (!existsSync(join(dir, "index.html"))) throw new Error(`${dir} has no console: run npm run build first`);
  return { dir, files: readdirSync(dir).filter((name) => !name.endsWith(".gz")) };
}

describe("the built console", () => {
  it("loads at most 150 KB gzipped, page, script and styles together", () => {
    const { dir, files } = built();
    const sizes = files.map((name) => ({ name, gzipped: gzipSync(readFileSync(join(dir, name)), { level: 9 }).length }));
    const total = sizes.reduce((sum, f) => sum + f.gzipped, 0);
    console.log(`console bundle: ${(total / 1024).toFixed(1)} KB gzipped (${sizes.map((f) => `${f.name} ${(f.gzipped / 1024).toFixed(1)} KB`).join(", ")})`);
    expect(files.some((name) => name.endsWith(".js"))).toBe(true);
    expect(total).toBeLessThanOrEqual(LIMIT_BYTES);
  });

  it("ships a gzip copy of every file, with the same bytes inside", async () => {
    const { dir, files } = built();
    const { gunzipSync } = await import("node:zlib");
    for (const name of files) expect(gunzipSync(readFileSync(join(dir, `${name}.gz`))).equals(readFileSync(join(dir, name))), name).toBe(true);
  });

  it("fetches nothing from another origin: the page names only its own files, the code imports no URL", () => {
    const { dir, files } = built();
    const page = readFileSync(join(dir, "index.html"), "utf8");
    expect(page).not.toMatch(/(src|href)="(https?:)?\/\//);
    for (const name of files.filter((f) => f.endsWith(".js") || f.endsWith(".css"))) {
      const code = readFileSync(join(dir, name), "utf8");
      expect(code, name).not.toMatch(/import\s*\(?\s*["'`]https?:/);
      expect(code, name).not.toMatch(/@import\s+url\(\s*["']?https?:/);
    }
  });
});
