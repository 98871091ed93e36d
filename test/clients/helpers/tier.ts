import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";

/**
 * Where the client tier's own packages live (test/clients/node_modules,
 * installed by `npm ci --prefix test/clients`), and whether a client can
 * run here: installed, and its declared Node engine (and that of the
 * dependency that carries it, e.g. openai 7 under @openai/agents) met by
 * this Node. A client that cannot run is not run, with the reason in the
 * test's name, so the output says what was left out and why.
 */
export const TIER_DIR = fileURLToPath(new URL("..", import.meta.url));
export const TIER_MODULES = join(TIER_DIR, "node_modules");

function manifest(pkg: string): { version: string; engines?: { node?: string } } | undefined {
  const file = join(TIER_MODULES, pkg, "package.json");
  return existsSync(file) ? (JSON.parse(readFileSync(file, "utf8")) as { version: string; engines?: { node?: string } }) : undefined;
}

const parts = (v: string) =>
  v
    .replace(/^v/, "")
    .split(".")
    .map((n) => Number(n));
function atLeast(version: string, floor: string): boolean {
  const a = parts(version);
  const b = parts(floor);
  for (let i = 0; i < 3; i++) if ((a[i] ?? 0) !== (b[i] ?? 0)) return (a[i] ?? 0) > (b[i] ?? 0);
  return true;
}

/** Whether `version` satisfies an engines range of the forms packages here use: `>=X[.Y.Z]`, `^X.Y.Z`, joined by `||`. */
export function satisfies(version: string, range: string): boolean {
  return range.split("||").some((alternative) => {
    const r = alternative.trim();
    if (r.startsWith(">=")) return atLeast(version, r.slice(2).trim());
    if (r.startsWith("^")) return parts(version)[0] === parts(r.slice(1))[0] && atLeast(version, r.slice(1));
    throw new Error(`engines range ${JSON.stringify(range)} is of a form this check does not read: extend test/clients/helpers/tier.ts`);
  });
}

export interface Runnable {
  readonly ok: boolean;
  /** Why not, for the test's name; empty when ok. */
  readonly reason: string;
}

/** Whether every package in `packages` is installed and declares a Node engine this Node meets. */
export function runnable(packages: readonly string[]): Runnable {
  for (const pkg of packages) {
    const m = manifest(pkg);
    if (!m) return { ok: false, reason: `${pkg} is not installed (npm ci --prefix test/clients)` };
    const range = m.engines?.node;
    if (range && !satisfies(process.version, range)) return { ok: false, reason: `${pkg}@${m.version} requires Node ${range}, this is ${process.version}` };
  }
  return { ok: true, reason: "" };
}

/** The test's name, with the reason it is not run on this Node when it is not. */
export function named(title: string, r: Runnable): string {
  return r.ok ? title : `${title} [not run: ${r.reason}]`;
}

/**
 * The native binary a CLI's npm package ships in its platform package
 * (an optionalDependency, installed from the npm registry with no install
 * script): Claude Code's `postinstall` only links it into place, and the
 * tier must not depend on install scripts running.
 */
export function claudeBinary(): string {
  const native = join(TIER_MODULES, "@anthropic-ai", `claude-code-${process.platform}-${process.arch}`, "claude");
  return existsSync(native) ? native : join(TIER_MODULES, ".bin", "claude");
}

export const bin = (name: string) => join(TIER_MODULES, ".bin", name);

/** Whether this branch serves the Gemini API to callers (the edge of issue 44 §3b). */
export const GEMINI_EDGE = existsSync(fileURLToPath(new URL("../../../src/edges/gemini", import.meta.url)));
