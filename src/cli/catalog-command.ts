import { builtInCatalog } from "../config/built-in-catalog.js";
import type { CatalogEntry } from "../config/catalog-schema.js";
import { ConfigError, loadConfigFile } from "../config/config.js";
import type { ModelCatalog } from "../config/model-catalog.js";

export interface CatalogOptions {
  /** Prints the effective catalog of this configuration (its `catalog.file` over the built-in one). */
  readonly config?: string;
  readonly json?: boolean;
  /** Entries whose provider is this (case-insensitive). */
  readonly provider?: string;
  /** Entries whose id contains this (case-insensitive). */
  readonly filter?: string;
}

const usd = (n: number | undefined): string => (n === undefined ? "-" : `${Number(n.toPrecision(6))}`);
const tokens = (n: number | undefined): string => {
  if (n === undefined) return "-";
  if (n % 1_048_576 === 0) return `${n / 1_048_576}Mi`;
  if (n % 1_000 === 0) return `${n / 1_000}k`;
  return n % 1_024 === 0 ? `${n / 1_024}Ki` : String(n);
};

const CAPABILITY_FLAGS = [
  ["tools", "T"],
  ["vision", "V"],
  ["jsonSchema", "J"],
  ["reasoning", "R"],
  ["promptCaching", "C"],
] as const;

function row(entry: CatalogEntry, fromFile: boolean): string[] {
  const p = entry.price;
  const c = entry.capabilities ?? {};
  return [
    `${entry.id}${fromFile ? " *" : ""}`,
    entry.provider,
    entry.kind,
    usd(p?.inputPerMTok),
    usd(p?.cachedInputPerMTok),
    usd(p?.cacheWrite5mPerMTok),
    usd(p?.cacheWrite1hPerMTok),
    usd(p?.outputPerMTok),
    usd(p?.reasoningPerMTok),
    usd(p?.perRequest),
    usd(p?.perWebSearch),
    tokens(c.contextWindow),
    tokens(c.maxOutputTokens),
    CAPABILITY_FLAGS.map(([field, flag]) => (c[field] === true ? flag : c[field] === false ? "." : "?")).join(""),
    entry.checked ?? "-",
  ];
}

const HEADER = ["model", "provider", "kind", "input", "cached", "write5m", "write1h", "output", "reasoning", "/request", "/search", "context", "max out", "TVJRC", "checked"];

/** The entries as an aligned text table, a legend under it. */
export function catalogTable(catalog: ModelCatalog, entries: readonly CatalogEntry[]): string {
  const rows = [HEADER, ...entries.map((e) => row(e, catalog.fromFile.has(e.id)))];
  const widths = HEADER.map((_, i) => Math.max(...rows.map((r) => r[i]!.length)));
  const lines = rows.map((r) =>
    r
      .map((cell, i) => (i >= 3 && i <= 12 ? cell.padStart(widths[i]!) : cell.padEnd(widths[i]!)))
      .join("  ")
      .trimEnd(),
  );
  return [
    `model catalog ${catalog.version}: ${entries.length} of ${catalog.entries.size} entries; USD per million tokens, per request, per search`,
    ...lines,
    "TVJRC: tools, vision, JSON schema, reasoning, prompt caching (. no, ? unknown); * set by catalog.file",
  ].join("\n");
}

/** The entries `options` asks for, in id order. */
export function selectEntries(catalog: ModelCatalog, options: CatalogOptions): CatalogEntry[] {
  const provider = options.provider?.toLowerCase();
  const filter = options.filter?.toLowerCase();
  return [...catalog.entries.values()].filter((e) => (provider === undefined || e.provider.toLowerCase() === provider) && (filter === undefined || e.id.includes(filter))).sort((a, b) => a.id.localeCompare(b.id));
}

/**
 * `sluice catalog`: the model catalog targets inherit prices and limits
 * from, as a table or as JSON (`--json`: the same shape as a `catalog.file`,
 * so it can be the start of one). With `--config FILE`, the catalog that
 * file's gateway would use. Returns the exit status.
 */
export async function catalogCommand(options: CatalogOptions, env: NodeJS.ProcessEnv, out: NodeJS.WritableStream): Promise<number> {
  let catalog: ModelCatalog = builtInCatalog();
  if (options.config !== undefined) {
    try {
      catalog = (await loadConfigFile(options.config, env)).catalog ?? catalog;
    } catch (error) {
      if (!(error instanceof ConfigError)) throw error;
      out.write(`${error.message}\n`);
      return 1;
    }
  }
  const entries = selectEntries(catalog, options);
  out.write(options.json ? `${JSON.stringify({ version: catalog.version, models: entries }, null, 2)}\n` : `${catalogTable(catalog, entries)}\n`);
  return 0;
}
