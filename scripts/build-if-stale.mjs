// Builds dist/ only when a source is newer than its output (the console
// too: console/ and gen/ against dist/console/index.html), so that
// `npm start` with an up-to-date build starts at once instead of spending
// seconds in tsc (it used to rebuild on every start, even for --help).
// It runs as `prestart`: the start script itself is then only
// `exec node dist/src/main.js`, and the gateway is npm's direct child, so
// SIGTERM to npm reaches it.
//
//   node scripts/build-if-stale.mjs          build when stale
//   node scripts/build-if-stale.mjs --check  exit 1 when stale, 0 when fresh; never build
import { spawnSync } from "node:child_process";
import { existsSync, readdirSync, readFileSync, statSync } from "node:fs";
import { join, relative } from "node:path";

const PROJECT = "tsconfig.build.json";
const CONFIGS = ["tsconfig.json", PROJECT];
const OUT_DIR = "dist";

/** Every TypeScript source the build compiles: the project's `include` folders, without node_modules. */
function sources(root) {
  const include = JSON.parse(readFileSync(join(root, PROJECT), "utf8")).include ?? [];
  const walk = (dir) =>
    readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
      const path = join(dir, entry.name);
      if (entry.isDirectory()) return entry.name === "node_modules" ? [] : walk(path);
      return /\.(c|m)?ts$/.test(entry.name) && !/\.d\.(c|m)?ts$/.test(entry.name) ? [path] : [];
    });
  return include.filter((dir) => existsSync(join(root, dir))).flatMap((dir) => walk(join(root, dir)));
}

/** Why the build is stale, or undefined when every output is newer than its source and the compiler settings. */
function staleness(root) {
  let oldestOutput = Infinity;
  for (const source of sources(root)) {
    const rel = relative(root, source);
    const output = join(
      root,
      OUT_DIR,
      rel.replace(/\.(c|m)?ts$/, (ext) => ext.replace("ts", "js")),
    );
    if (!existsSync(output)) return `${rel} has not been built`;
    const outputTime = statSync(output).mtimeMs;
    if (statSync(source).mtimeMs > outputTime) return `${rel} changed`;
    oldestOutput = Math.min(oldestOutput, outputTime);
  }
  for (const config of CONFIGS) {
    if (existsSync(join(root, config)) && statSync(join(root, config)).mtimeMs > oldestOutput) return `${config} changed`;
  }
  return undefined;
}

/** Why the console bundle is stale: one of its sources (its own folder, the generated code it imports) is newer than its page. */
function consoleStaleness(root) {
  if (!existsSync(join(root, "console"))) return undefined;
  const page = join(root, OUT_DIR, "console", "index.html");
  if (!existsSync(page)) return "the console has not been built";
  const built = statSync(page).mtimeMs;
  const walk = (dir) =>
    readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
      const path = join(dir, entry.name);
      return entry.isDirectory() ? walk(path) : [path];
    });
  const changed = ["console", "gen"]
    .filter((dir) => existsSync(join(root, dir)))
    .flatMap((dir) => walk(join(root, dir)))
    .find((file) => statSync(file).mtimeMs > built);
  return changed ? `${relative(root, changed)} changed` : undefined;
}

const root = process.cwd();
const reason = staleness(root);
const consoleReason = consoleStaleness(root);
if (process.argv.includes("--check")) {
  if (reason ?? consoleReason) process.stdout.write(`stale: ${reason ?? consoleReason}\n`);
  process.exit((reason ?? consoleReason) ? 1 : 0);
}
if (reason) {
  process.stderr.write(`sluice: building (${reason})\n`);
  const tsc = join(root, "node_modules", ".bin", "tsc");
  const result = spawnSync(tsc, ["-p", PROJECT], { cwd: root, stdio: "inherit" });
  if (result.error) process.stderr.write(`sluice: cannot run the TypeScript compiler (${result.error.code ?? result.error.message}); run npm ci first\n`);
  if (result.status !== 0) process.exit(result.status ?? 1);
}
if (consoleReason) {
  process.stderr.write(`sluice: building the console (${consoleReason})\n`);
  const result = spawnSync(process.execPath, [join(root, "scripts", "build-console.mjs")], { cwd: root, stdio: "inherit" });
  process.exit(result.status ?? 1);
}
