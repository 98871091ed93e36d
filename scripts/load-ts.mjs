// Loads TypeScript sources into a generator script (the docs generators):
// `entry` re-exports what the script reads; esbuild bundles it, and the
// bundle is imported from a scratch folder removed at once.
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { build } from "esbuild";

const root = new URL("..", import.meta.url).pathname;

/** The module `entry` (TypeScript, resolved from the repository's root) as it exports, under a name for its scratch folder. */
export async function loadTs(entry, name) {
  const result = await build({
    absWorkingDir: root,
    stdin: { contents: entry, resolveDir: root, sourcefile: `${name}-entry.ts`, loader: "ts" },
    bundle: true,
    write: false,
    format: "esm",
    platform: "node",
    target: "node20",
    logLevel: "warning",
  });
  const dir = mkdtempSync(join(tmpdir(), `sluice-${name}-`));
  try {
    const file = join(dir, "sources.mjs");
    writeFileSync(file, result.outputFiles[0].text);
    return await import(pathToFileURL(file).href);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
