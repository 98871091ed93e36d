import { createHash } from "node:crypto";
import { existsSync, readdirSync, readFileSync, statSync } from "node:fs";
import { dirname, join, relative, sep } from "node:path";
import { fileURLToPath } from "node:url";

/** Files the console may have: a few bundles, styles, an icon. More means a wrong folder, not a console. */
const MAX_FILES = 64;
/** Largest file loaded: the whole bundle is far smaller (a test holds it to 150 KB gzipped). */
const MAX_FILE_BYTES = 4 * 1024 * 1024;

const CONTENT_TYPES: Readonly<Record<string, string>> = {
  ".html": "text/html; charset=utf-8",
  ".js": "text/javascript; charset=utf-8",
  ".css": "text/css; charset=utf-8",
  ".svg": "image/svg+xml",
  ".png": "image/png",
  ".ico": "image/x-icon",
  ".json": "application/json",
  ".map": "application/json",
  ".txt": "text/plain; charset=utf-8",
};

/** One servable file, read once at start-up. */
export interface ConsoleAsset {
  readonly body: Buffer;
  /** The same bytes gzip-compressed by the build (`<file>.gz`), when it made one. */
  readonly gzip?: Buffer;
  readonly contentType: string;
  /** Strong validator: a digest of the bytes. */
  readonly etag: string;
  /** Content-hashed names (`app-3KX2.js`) never change: cached for a year; the rest is revalidated. */
  readonly immutable: boolean;
}

/** URL path under /console/ (no leading slash, `/` separators) → file. */
export type ConsoleAssets = ReadonlyMap<string, ConsoleAsset>;

/** `<package root>/dist/console`, whether this module runs from dist/src/console or from src/console (tests). */
export function defaultConsoleDir(): string {
  const here = dirname(fileURLToPath(import.meta.url));
  const compiled = here.split(sep).slice(-3).join("/") === "dist/src/console";
  return join(here, compiled ? "../../.." : "../..", "dist", "console");
}

function extensionOf(name: string): string {
  const dot = name.lastIndexOf(".");
  return dot < 0 ? "" : name.slice(dot);
}

/**
 * Reads the built console (`npm run build` writes it) into memory. Only
 * these files are ever served, looked up by exact name: a request path
 * never reaches the file system, so `..`, encoded slashes or symlinks have
 * nothing to traverse. Unknown extensions, oversized files and `.gz`
 * companions (served as encodings, not as files) are left out. Returns an
 * empty map when the folder does not exist (the console is not built).
 */
export function loadConsoleAssets(dir: string): ConsoleAssets {
  const assets = new Map<string, ConsoleAsset>();
  if (!existsSync(dir)) return assets;
  const walk = (folder: string): string[] =>
    readdirSync(folder, { withFileTypes: true }).flatMap((entry) => {
      const path = join(folder, entry.name);
      if (entry.isDirectory()) return walk(path);
      return entry.isFile() ? [path] : [];
    });
  const files = walk(dir);
  const names = new Set(files.map((f) => relative(dir, f).split(sep).join("/")));
  for (const name of names) {
    if (name.endsWith(".gz")) continue;
    const contentType = CONTENT_TYPES[extensionOf(name)];
    if (contentType === undefined) continue;
    const path = join(dir, name);
    if (statSync(path).size > MAX_FILE_BYTES) continue;
    if (assets.size >= MAX_FILES) throw new Error(`${dir} holds more than ${MAX_FILES} console files: not a console build`);
    const body = readFileSync(path);
    const gzPath = `${path}.gz`;
    const gzip = names.has(`${name}.gz`) && statSync(gzPath).size <= MAX_FILE_BYTES ? readFileSync(gzPath) : undefined;
    assets.set(name, {
      body,
      ...(gzip ? { gzip } : {}),
      contentType,
      etag: `"${createHash("sha256").update(body).digest("base64url").slice(0, 27)}"`,
      immutable: /-[A-Z0-9]{8}\.[a-z]+$/.test(name),
    });
  }
  return assets;
}
