import { closeSync, fstatSync, openSync, readSync } from "node:fs";
import { parse } from "yaml";
import { builtInCatalog } from "./built-in-catalog.js";
import { catalogFileSchema, MAX_CATALOG_FILE_BYTES } from "./catalog-schema.js";
import { isRecord } from "./check-input.js";
import type { ConfigProblem } from "./config-problem.js";
import { catalogOf, type ModelCatalog } from "./model-catalog.js";

const PATH = ["catalog", "file"];

/** At most `max` bytes of a file, and whether there was more: a huge file is refused without being read whole. */
function readBounded(path: string, max: number): { readonly text: string; readonly tooLarge: boolean } {
  const fd = openSync(path, "r");
  try {
    if (fstatSync(fd).size > max) return { text: "", tooLarge: true };
    const buffer = Buffer.alloc(max + 1);
    const n = readSync(fd, buffer, 0, max + 1, 0);
    return { text: buffer.subarray(0, n).toString("utf8"), tooLarge: n > max };
  } finally {
    closeSync(fd);
  }
}

/**
 * The operator's catalog file over the built-in one, or what is wrong with
 * it: unreadable, too large, not YAML or JSON (JSON is YAML), or not the
 * catalog schema (each problem at its entry). Read synchronously like the
 * TLS files, so check-config, start-up and reload report it in one pass.
 */
export function readCatalogFile(path: string): { readonly catalog?: ModelCatalog; readonly problems: readonly ConfigProblem[] } {
  let text: string;
  try {
    const read = readBounded(path, MAX_CATALOG_FILE_BYTES);
    if (read.tooLarge) return { problems: [{ path: PATH, message: `${path} is larger than ${MAX_CATALOG_FILE_BYTES} bytes` }] };
    text = read.text;
  } catch (error) {
    return { problems: [{ path: PATH, message: `cannot read ${path}: ${(error as NodeJS.ErrnoException).code ?? "error"}` }] };
  }
  let data: unknown;
  try {
    data = parse(text, { maxAliasCount: 100 });
  } catch (error) {
    return { problems: [{ path: PATH, message: `${path} is not YAML or JSON: ${(error as Error).message.split("\n")[0]}` }] };
  }
  const parsed = catalogFileSchema.safeParse(data);
  if (!parsed.success) return { problems: parsed.error.issues.map((issue) => ({ path: PATH, message: `${path}: ${issue.path.join(".") || "(top)"}: ${issue.message}` })) };
  return { catalog: catalogOf(parsed.data, builtInCatalog()), problems: [] };
}

/** The catalog a configuration input uses: the built-in one, with its `catalog.file` over it when it names one. */
export function catalogForInput(input: unknown): { readonly catalog?: ModelCatalog; readonly problems: readonly ConfigProblem[] } {
  const settings = isRecord(input) ? input.catalog : undefined;
  const file = isRecord(settings) ? settings.file : undefined;
  return typeof file === "string" && file !== "" ? readCatalogFile(file) : { catalog: builtInCatalog(), problems: [] };
}

/** Targets whose `catalog:` names no entry of `catalog`, each at its path. */
export function catalogRefProblems(input: unknown, catalog: ModelCatalog): ConfigProblem[] {
  if (!isRecord(input) || !isRecord(input.models)) return [];
  const problems: ConfigProblem[] = [];
  const check = (ref: unknown, path: PropertyKey[]) => {
    if (typeof ref === "string" && !catalog.entries.has(ref)) problems.push({ path, message: `no catalog entry "${ref}" (sluice catalog lists them)` });
  };
  for (const [alias, model] of Object.entries(input.models)) {
    if (!isRecord(model)) continue;
    if (Array.isArray(model.targets)) model.targets.forEach((t: unknown, i) => isRecord(t) && check(t.catalog, ["models", alias, "targets", i, "catalog"]));
    else check(model.catalog, ["models", alias, "catalog"]);
  }
  return problems;
}
