// Installs the client tier (test/clients: the real coding agents and agent
// SDKs, pinned in their own lockfile) before `npm test`, when it is missing
// or older than its lockfile, so that the README's one test command runs the
// whole suite on a fresh clone. Needs the npm registry only; CI installs it
// first (.ci/run), and then this does nothing.
import { spawnSync } from "node:child_process";
import { existsSync, statSync } from "node:fs";
import { join } from "node:path";

const tier = join(process.cwd(), "test", "clients");
const lock = join(tier, "package-lock.json");
const installed = join(tier, "node_modules", ".package-lock.json");
if (existsSync(installed) && statSync(installed).mtimeMs >= statSync(lock).mtimeMs) process.exit(0);
process.stdout.write("test/clients: installing the client tier (npm ci --prefix test/clients)\n");
const npm = process.platform === "win32" ? "npm.cmd" : "npm";
const run = spawnSync(npm, ["ci", "--prefix", tier, "--no-audit", "--no-fund"], { stdio: "inherit" });
process.exit(run.status ?? 1);
