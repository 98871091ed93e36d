// Builds the console (console/src, a Preact + uPlot app) into dist/console/:
// one content-hashed script and stylesheet, index.html pointing at them, and
// a gzip copy of each next to it (the gateway serves that to clients that
// take gzip, so nothing is compressed per request). Everything the page
// needs is in the bundle: nothing is fetched from a CDN. Run by `npm run
// build` after tsc; `node scripts/build-console.mjs` alone rebuilds only it.
import { mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { basename, join } from "node:path";
import { gzipSync } from "node:zlib";
import { build } from "esbuild";

const root = new URL("..", import.meta.url).pathname;
const out = join(root, "dist", "console");

rmSync(out, { recursive: true, force: true });
mkdirSync(out, { recursive: true });

const result = await build({
  absWorkingDir: root,
  entryPoints: { app: "console/src/main.tsx" },
  bundle: true,
  outdir: out,
  entryNames: "[name]-[hash]",
  format: "esm",
  // Browsers from 2021 on: every one that streams fetch responses, which server streaming over Connect needs.
  target: ["chrome100", "firefox100", "safari15"],
  minify: true,
  legalComments: "eof",
  jsx: "automatic",
  jsxImportSource: "preact",
  tsconfig: "console/tsconfig.json",
  metafile: true,
  logLevel: "warning",
  define: { "process.env.NODE_ENV": '"production"' },
});

const outputs = Object.keys(result.metafile.outputs).map((path) => basename(path));
const js = outputs.find((name) => name.endsWith(".js"));
const css = outputs.find((name) => name.endsWith(".css"));
if (!js || !css) throw new Error(`console build: expected a script and a stylesheet, got ${outputs.join(", ")}`);

const page = readFileSync(join(root, "console", "index.html"), "utf8")
  .replace("%JS%", js)
  .replace("%CSS%", css);
writeFileSync(join(out, "index.html"), page);

for (const name of [js, css, "index.html"]) {
  const bytes = readFileSync(join(out, name));
  writeFileSync(join(out, `${name}.gz`), gzipSync(bytes, { level: 9 }));
}
const sizes = [js, css, "index.html"].map((name) => `${name} ${(readFileSync(join(out, `${name}.gz`)).length / 1024).toFixed(1)} KB gz`);
if (process.env.SLUICE_BUILD_QUIET !== "1") process.stdout.write(`console: ${sizes.join(", ")}\n`);
