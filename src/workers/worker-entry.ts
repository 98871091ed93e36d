import { existsSync } from "node:fs";
import { fileURLToPath, pathToFileURL } from "node:url";

/**
 * The file a `worker_threads` Worker starts from, named beside the module
 * that starts it (`workerEntry(import.meta.url, "./pglite-worker.js")`).
 *
 * Why not just `new URL(name, import.meta.url)`: a worker is a fresh
 * Node isolate that loads plain JavaScript. From `dist/` (the gateway, the
 * bench, every spawned gateway process) the sibling `.js` is there. From
 * the TypeScript sources (vitest runs `src/` in process) there is no `.js`
 * beside the `.ts`, and Node 20 cannot strip types, so the compiled twin
 * under `dist/` is used: `npm test` builds before it runs the suite, which
 * is the same order the gateway-process tests already rely on. A missing
 * twin is said by name rather than surfacing as a worker's `ERR_MODULE_NOT_FOUND`.
 */
export function workerEntry(from: string, name: string): URL {
  const sibling = new URL(name, from);
  const fromPath = fileURLToPath(from);
  if (!fromPath.endsWith(".ts")) return sibling;
  const siblingPath = fileURLToPath(sibling);
  const at = siblingPath.lastIndexOf("/src/");
  if (at < 0) throw new Error(`worker entry ${name}: ${fromPath} is not under a src/ folder`);
  const compiled = `${siblingPath.slice(0, at)}/dist${siblingPath.slice(at)}`;
  if (!existsSync(compiled)) throw new Error(`worker entry ${name}: run from sources, it needs the build (npm run build): ${compiled} is missing`);
  return pathToFileURL(compiled);
}
